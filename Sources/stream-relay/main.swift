print("stream-relay")
