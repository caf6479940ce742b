-- wrk script: POST the AdmissionReview in $WH_BODY; optional pacing $WH_DELAY_MS per request
-- (wrk 4.1 has no -R rate option: connections x 1000/delay approximates the target rate).
local f = assert(io.open(os.getenv("WH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local pause = tonumber(os.getenv("WH_DELAY_MS") or "0")
if pause > 0 then
  function delay()
    return pause
  end
end
