-- The end of every benchmark's wrk script, loaded with dofile(): numbers the threads
-- (`tid` in each thread's globals) and prints one result line,
--   RESULT calls/s=R p50_ms=P p99_ms=Q requests=N errors=E
-- where errors counts socket errors, timeouts, non-2xx answers and the wrong answers a
-- script's response() counted in its global `bad` (set it to 0 in init()).
local threads = {}

function setup(thread)
    table.insert(threads, thread)
    thread:set("tid", #threads)
end

function done(summary, latency, requests)
    local wrong = 0
    for _, t in ipairs(threads) do
        wrong = wrong + (t:get("bad") or 0)
    end
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write
        + summary.errors.status + summary.errors.timeout + wrong
    io.write(string.format("RESULT calls/s=%.0f p50_ms=%.3f p99_ms=%.3f requests=%d errors=%d\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
        latency:percentile(99) / 1000, summary.requests, errors))
end
