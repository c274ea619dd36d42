-- wrk script: every request is an absolute-form proxy request (GET http://host:port/path HTTP/1.1) on keep-alive
-- connections to the proxy wrk was pointed at.
--   BENCH_TARGET       the absolute URL to request (required)
--   BENCH_PROXY_AUTH   a Proxy-Authorization value to send (optional; srt's proxy needs one)
-- At the end it prints one line: BENCH rps=... requests=... errors=... non2xx=... p50_us=... p99_us=...
local target = os.getenv("BENCH_TARGET")
if not target or target == "" then
  error("BENCH_TARGET is not set")
end
local auth = os.getenv("BENCH_PROXY_AUTH")
local authority = target:match("^https?://([^/]+)")

wrk.method = "GET"
wrk.path = target
wrk.headers["Host"] = authority
if auth and auth ~= "" then
  wrk.headers["Proxy-Authorization"] = auth
end

done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  local secs = summary.duration / 1e6
  io.write(string.format("BENCH rps=%.1f requests=%d errors=%d non2xx=%d p50_us=%d p99_us=%d\n",
    (summary.requests - summary.errors.status) / secs, summary.requests, errors, summary.errors.status,
    latency:percentile(50), latency:percentile(99)))
end
