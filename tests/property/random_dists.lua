-- Random valid distributions for the property specs. Deterministic: math.randomseed(SEED) is set by
-- each spec, and Lua 5.4's generator gives the same sequence for the same seed everywhere.

local R = math.random

local function pick(list) return list[R(#list)] end

-- A random core set on a gx x gy grid: the whole grid, or one sub-rectangle.
local function cores(gx, gy)
  if R(2) == 1 then return nil end
  local x0, y0 = R(0, gx - 1), R(0, gy - 1)
  return string.format("(%d,%d)-(%d,%d)", x0, y0, R(x0, gx - 1), R(y0, gy - 1))
end

-- A random distribution of `shape` (element counts), with `page` forced when given (so that
-- operands of one op can share a page box where the kernel relies on it).
function random_dist(shape, dtype, opts)
  opts = opts or {}
  local r = #shape
  local t = { shape = shape, dtype = dtype }
  local kind = opts.page and "box" or pick(r >= 2 and { "row", "box", "tile" } or { "row", "box" })
  local page = {}
  if kind == "tile" then
    local th, tw = pick({ 16, 32 }), pick({ 16, 32 })
    t.tile = th .. "x" .. tw
    for i = 1, r - 2 do page[i] = 1 end
    page[r - 1], page[r] = th, tw
  elseif kind == "box" then
    for i = 1, r do page[i] = opts.page and opts.page[i] or R(1, 3) end
    t.page = page
  end
  if R(6) == 1 and not opts.page then
    t.interleaved = true
  else
    local shard = {}
    for i = 1, r do
      local p = page[i] or 1
      if kind == "row" and i == r then p = R(1, 6) end
      shard[i] = p * R(1, 3)
    end
    t.shard = shard
  end
  if R(5) == 1 and not opts.l1 then
    t.buffer = "dram"
    t.banks = R(1, 6)
  else
    local gx, gy = R(1, 8), R(1, 8)
    t.grid = gx .. "x" .. gy
    t.cores = cores(gx, gy)
  end
  t.strategy = pick({ "round_robin", "contiguous" })
  t.orientation = pick({ "row", "col" })
  return t
end

-- A random shape: rank lo..hi, dims 1..hi_dim, at most max_elems elements.
function random_shape(lo, hi, hi_dim, max_elems)
  local s, n = {}, 1
  for i = 1, R(lo, hi) do
    s[i] = R(1, hi_dim)
    n = n * s[i]
  end
  while n > max_elems do
    local big = 1
    for i = 2, #s do if s[i] > s[big] then big = i end end
    n = n // s[big]
    s[big] = (s[big] + 1) // 2
    n = n * s[big]
  end
  return s
end

-- Declares `name` once per dtype that has targets; targets is a list of { dtype, target }.
function declare(name, template, inputs, targets, params_for, scalars, index)
  local by = {}
  for _, t in ipairs(targets) do
    by[t[1]] = by[t[1]] or {}
    table.insert(by[t[1]], t[2])
  end
  for dtype, list in pairs(by) do
    local ins = {}
    for i, n in ipairs(inputs) do ins[i] = { name = n, dtype = dtype, index = index and index[i] or "..." } end
    op {
      name = name, template = template, params = params_for(dtype), scalars = scalars,
      inputs = ins, outputs = { { name = "out", dtype = dtype, index = index and index[#inputs + 1] or "..." } },
      targets = list,
    }
  end
end

-- A random distribution whose pages are wide: rows of more than 256 elements where the shape allows
-- (interleaved, a wide shard of row pages, or a wide box), or 32x32 tiles; so kernels' internal blocks
-- (256-element chunks, 8-row and 32-column panels, 256-long k steps) are crossed, evenly or not.
function random_wide_dist(shape, dtype)
  local r, w = #shape, shape[#shape]
  local t = { shape = shape, dtype = dtype }
  local kind = pick(r >= 2 and { "interleaved", "row", "box", "tile" } or { "interleaved", "row", "box" })
  if kind == "interleaved" then
    t.interleaved = true
  else
    local shard, page = {}, {}
    for i = 1, r do shard[i] = R(1, 3) end
    local wide = w > 256 and R(257, w) or w
    if kind == "row" then
      shard[r] = wide
    elseif kind == "box" then
      for i = 1, r do page[i] = 1 end
      page[r] = wide
      if r >= 2 then page[r - 1] = R(1, 2) end
      for i = 1, r do shard[i] = page[i] * R(1, 2) end
      t.page = page
    else
      t.tile = "32x32"
      for i = 1, r - 2 do shard[i] = R(1, 2) end
      shard[r - 1], shard[r] = 32 * R(1, 2), 32 * R(1, 3)
    end
    t.shard = shard
  end
  if R(6) == 1 then
    t.buffer = "dram"
    t.banks = R(1, 4)
  else
    local gx, gy = R(1, 4), R(1, 3)
    t.grid = gx .. "x" .. gy
    t.cores = cores(gx, gy)
  end
  t.strategy = pick({ "round_robin", "contiguous" })
  t.orientation = pick({ "row", "col" })
  return t
end

-- One operand wide, or any: half the operands of the large cases get the wide kind.
function random_any_dist(shape, dtype)
  return R(2) == 1 and random_wide_dist(shape, dtype) or random_dist(shape, dtype)
end
