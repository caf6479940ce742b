-- wrk script: GET (baseline), with the same optional pacing as post.lua.
local pause = tonumber(os.getenv("WH_DELAY_MS") or "0")
if pause > 0 then
  function delay()
    return pause
  end
end
