-- catchUp.lua: the text and the end offsets of events from+1 … to, for a lossless
-- catch-up (docs/DATA_MODEL.md §4).
--
-- In a stream sealed at rest (the meta's `atrest`, §15; with none recorded, sealed when
-- the caller has keys) the whole text key comes back: the relay opens its records, then
-- cuts.
--
-- KEYS[1] text: relay:{<ownerHash>:<requestId>}:text (string)
-- KEYS[2] offsets: relay:{…}:offsets (u32 end offsets, bytes into the text, big-endian at byte 4 × seq;
--         the top bit marks a part's piece, StoredPiece, and is not part of the offset)
-- KEYS[3] meta: relay:{…}:meta (hash; optional: without it the mode goes by ARGV[3])
-- ARGV[1] from: the seq read through (0 for none)
-- ARGV[2] to: the last seq wanted
-- ARGV[3] haveKeys: whether the caller has keys, '1' or '0' (the mode of a stream whose meta records none)
-- Reply nil: the text key has expired
-- Reply {start, end, ends, text, sealed}:
--       [1] start: event `from`'s end offset, bytes (0 when `from` is 0)
--       [2] end: event `to`'s end offset, bytes
--       [3] ends: the offsets key's 4 bytes per seq from+1 … to (OffsetRuns, part marks included)
--       [4] text: the bytes start ..< end ('' when end ≤ start); in a sealed stream, the
--           whole text key (its sealed records)
--       [5] sealed: 1 when [4] is the sealed text key, else 0

if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local from = tonumber(ARGV[1])
local to = tonumber(ARGV[2])
local o = redis.call('BITFIELD', KEYS[2], 'GET', 'u32', '#' .. ARGV[1], 'GET', 'u32', '#' .. ARGV[2])
local s = o[1] % 2147483648
local e = o[2] % 2147483648
if from == 0 then s = 0 end
local ends = redis.call('GETRANGE', KEYS[2], 4 * (from + 1), 4 * to + 3)
local mode = KEYS[3] and redis.call('HGET', KEYS[3], 'atrest')
if mode == 'sealed' or (not mode and ARGV[3] == '1') then
  return {s, e, ends, redis.call('GET', KEYS[1]), 1}
end
if e <= s then return {s, e, ends, '', 0} end
return {s, e, ends, redis.call('GETRANGE', KEYS[1], s, e - 1), 0}
