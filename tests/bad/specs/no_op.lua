-- declares nothing
local x = 1
