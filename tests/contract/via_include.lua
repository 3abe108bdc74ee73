include "helper_op.lua"

declare_mm({ 4, 6 }, { 5, 8 }) -- the error is reported here, at line 3 of this file
