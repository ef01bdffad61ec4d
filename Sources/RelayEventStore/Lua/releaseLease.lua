-- releaseLease.lua: releases a lease only while it names the caller's instance: the owner
-- ending its generation must not free a lease a taker holds (docs/DATA_MODEL.md §6.1).
--
-- KEYS[1] lease: relay:{<ownerHash>:<requestId>}:lease (string: the owning instance)
-- ARGV[1] instance: the caller's instance name
-- Reply 1: released (deleted)
-- Reply 0: the lease names another instance, or is gone; nothing changed

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
