-- refreshLease.lua: refreshes a running generation's owner lease only while the caller is
-- still its owner (docs/DATA_MODEL.md §6.1): the meta's ownership epoch is the caller's and
-- the lease is the caller's or has lapsed unclaimed. An owner that stalled past its lease
-- and woke after a takeover must not write the taker's lease over (the taker's lease would
-- then lapse with the woken owner, and a third instance take the stream again).
--
-- KEYS[1] lease: relay:{<ownerHash>:<requestId>}:lease (string: the owning instance)
-- KEYS[2] meta: relay:{…}:meta (hash)
-- ARGV[1] instance: the caller's instance name
-- ARGV[2] lease_ms: the lease's lifetime, ms
-- ARGV[3] epoch: the caller's ownership epoch
-- Reply 1: refreshed
-- Reply 0: the stream no longer runs under the caller's epoch (ended, or gone)
-- Reply -1: another instance took it over: a newer epoch, whether or not that taker has
--       ended the answer since (checked first: a woken owner told only "not running" would
--       go on and write its text over the taker's), or the lease names another instance

local m = redis.call('HMGET', KEYS[2], 'state', 'epoch')
if not m[1] then return 0 end
if (m[2] or '0') ~= ARGV[3] then return -1 end
if m[1] ~= 'running' then return 0 end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
