/*
 * spec.c - stage 1: run an op spec (Lua 5.4) in a sandbox and convert what it declared to C.
 *
 * The sandbox: chunks are loaded as text only ("t": a crafted bytecode chunk can crash the VM); the
 * environment holds the safe parts of the base library plus string, table and math (math.random seeded
 * with a constant, so a spec's output is the same every run), and no io, os, debug, coroutine, load,
 * dofile or require; include() reads only regular files whose real path is
 * below the spec folder. Two budgets hold whatever the spec does: an instruction count (once spent,
 * every later instruction fails again, so no pcall, xpcall, metamethod or finalizer outlives it, and
 * lua_close runs with it spent), a wall-clock limit read by the same hook (failing the same way), and a
 * memory cap enforced by the allocator; the library functions whose C
 * loops neither budget sees (pattern matching, string.rep, table.move and the like) are wrapped to
 * refuse what would run too long before it starts, and list lengths are bounded before they are read
 * (a border can be 2^40 with 41 entries). Chunks are named "@file",
 * and every error that reaches the user reads "file:line: ...", whatever value was thrown.
 *
 * A spec calls op{...} once per op. op() only records the table and the line it was called from;
 * the tables are converted afterwards with raw accesses (no metamethods run), and every conversion
 * error is reported at that line.
 */
#include <stdarg.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exe_dir.h"
#include "ndgen.h"

enum { INSTRUCTION_BUDGET = 200 * 1000 * 1000 };  /* Lua instructions a spec may run */
enum { HOOK_PERIOD = 10000 };                      /* the count hook fires after every this many */
enum { LARGE_GROWTH = 64 << 10 };                  /* an allocation growing this much reads the clock */
enum { MAX_OPS = 1 << 16, MAX_TARGETS = 1 << 16 }; /* op() calls per spec, targets per op; far past real specs */

static const char REG_OPS[] = "ndgen.ops";       /* registry: list of {table, line} */
static const char REG_DEPS[] = "ndgen.deps";     /* registry: list of files read */
static const char REG_DIR[] = "ndgen.specdir";   /* registry: the include folder, a real path */
static const char REG_MAIN[] = "ndgen.main";     /* registry: "@path" of the spec file being loaded */

/* ---------------------------------------------------------------- sandbox */

/* The budgets of one Lua state, kept as its allocator's data. */
typedef struct sandbox {
    size_t used, limit;  /* bytes the state holds, and the cap */
    bool spent;          /* a budget ran out: every later instruction fails */
    int64_t hooks;       /* count hooks so far: HOOK_PERIOD instructions each */
    double deadline;     /* the wall clock's limit (monotonic_now) */
    double seconds;      /* the limit as given, for messages */
    bool late;           /* the deadline passed: every instruction fails */
} sandbox;

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether the deadline has passed: read by the hook every HOOK_PERIOD instructions, and by the allocator
 * at every large growth. C calls are not interrupted otherwise: those whose loops could run long
 * without allocating are refused before they start (lua_rep_safe and the wrappers beside it). */
static bool past_deadline(sandbox *sb)
{
    if (!sb->late && monotonic_now() > sb->deadline)
        sb->late = true;
    return sb->late;
}

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sandbox *sb = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        sb->used -= old;
        return NULL;
    }
    if (nsize > old && sb->used - old + nsize > sb->limit)
        return NULL; /* Lua raises a memory error */
    /* A large growth reads the clock too: a C call that builds big strings (string.rep, table.concat)
     * may take long between the hook's checks, which count instructions. Past the deadline it fails (a
     * memory error, reported as the time limit), unless the budget is spent and the hook's own
     * message is being made. */
    if (nsize > old && nsize - old >= LARGE_GROWTH && !sb->spent && past_deadline(sb))
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        sb->used = sb->used - old + nsize;
    return p;
}

static sandbox *sandbox_of(lua_State *L)
{
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

/* Every HOOK_PERIOD instructions: the instruction budget and the wall clock. */
static void budget_hook(lua_State *L, lua_Debug *ar)
{
    sandbox *sb = sandbox_of(L);
    bool counted_out = ++sb->hooks >= INSTRUCTION_BUDGET / HOOK_PERIOD;
    if (!sb->spent && !counted_out && !past_deadline(sb))
        return;
    if (!sb->spent) { /* from now on, every instruction fails: a caught error buys nothing */
        sb->spent = true;
        lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
    }
    /* ar is the function running when the budget ran out: report its file:line, as every error does */
    lua_getinfo(L, "Sl", ar);
    const char *where = ar->source[0] == '@' ? ar->source + 1 : ar->short_src;
    if (sb->late)
        lua_pushfstring(L, "%s:%d: the spec ran for more than %f seconds of wall-clock time (--spec-seconds sets the "
                           "limit); is there an endless loop?", where, ar->currentline, sb->seconds);
    else
        lua_pushfstring(L, "%s:%d: the spec ran for more than %d Lua instructions; is there an endless loop?", where,
                        ar->currentline, INSTRUCTION_BUDGET);
    lua_error(L);
}

/* Whether msg starts with a position, "file:line:". */
static bool has_position(const char *msg)
{
    const char *colon = strchr(msg, ':');
    if (!colon || colon == msg || colon[1] < '0' || colon[1] > '9')
        return false;
    const char *p = colon + 1;
    while (*p >= '0' && *p <= '9')
        ++p;
    return *p == ':';
}

/* The message handler of every protected call: the error as "file:line: message", with the position
 * of the innermost spec function on the stack when the thrown value carries none. */
static int locate_error(lua_State *L)
{
    const char *msg = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : NULL;
    if (msg && has_position(msg))
        return 1;
    lua_Debug ar;
    const char *file = "?";
    int line = 0;
    for (int level = 1; lua_getstack(L, level, &ar); ++level)
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && ar.source[0] == '@') {
            file = ar.source + 1;
            line = ar.currentline;
            break;
        }
    if (msg)
        lua_pushfstring(L, "%s:%d: %s", file, line, msg);
    else
        lua_pushfstring(L, "%s:%d: error raised with a %s value instead of a message", file, line, luaL_typename(L, 1));
    return 1;
}

static void push_list_append(lua_State *L, const char *key)
{
    /* [value] -> appends value to registry[key] */
    lua_getfield(L, LUA_REGISTRYINDEX, key);
    lua_insert(L, -2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
}

/* op{...}: records the table and the line of the spec file being loaded from which it was called,
 * through any functions and included files in between, so errors about the op name a line of the file
 * they are reported against. */
static int lua_op(lua_State *L)
{
    lua_Debug ar;
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_OPS);
    if (lua_rawlen(L, -1) >= MAX_OPS)
        return luaL_error(L, "op: more than %d ops in one spec", MAX_OPS);
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_MAIN);
    const char *main_source = lua_tostring(L, -1);
    int line = 0;
    for (int level = 1; !line && lua_getstack(L, level, &ar); ++level)
        if (lua_getinfo(L, "Sl", &ar) && main_source && strcmp(ar.source, main_source) == 0)
            line = ar.currentline;
    lua_pop(L, 1);
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, line);
    lua_rawseti(L, -2, 2);
    push_list_append(L, REG_OPS);
    return 0;
}

/* Loads file as a text chunk with the sandbox as its environment; leaves the function on the stack. */
static int load_sandboxed(lua_State *L, const char *path)
{
    int rc = luaL_loadfilex(L, path, "t");
    if (rc != LUA_OK)
        return rc;
    lua_getfield(L, LUA_REGISTRYINDEX, "ndgen.env");
    lua_setupvalue(L, -2, 1); /* a main chunk's first upvalue is _ENV */
    lua_pushstring(L, path);
    push_list_append(L, REG_DEPS);
    return LUA_OK;
}

/* include("name.lua"): runs another spec file from the spec folder, in the same sandbox. The name is
 * resolved to its real path, which must be a regular file inside the spec folder: a symlink pointing out
 * is refused. */
static int lua_include(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    char real[PATH_MAX];
    struct stat st;
    if (name[0] == '/' || strstr(name, "..") || strchr(name, '\\'))
        return luaL_error(L, "include '%s': only files inside the spec folder can be included", name);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_DIR);
    const char *dir = lua_tostring(L, -1);
    lua_pushfstring(L, "%s/%s", dir, name);
    const char *path = lua_tostring(L, -1);
    if (!realpath(path, real) || stat(real, &st) != 0)
        return luaL_error(L, "include '%s': no such file in %s", name, dir);
    size_t n = strlen(dir);
    if (strncmp(real, dir, n) != 0 || (real[n] != '/' && real[n] != '\0'))
        return luaL_error(L, "include '%s': it resolves to %s, outside the spec folder %s", name, real, dir);
    if (!S_ISREG(st.st_mode))
        return luaL_error(L, "include '%s': not a regular file", name);
    if (load_sandboxed(L, real) != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 0);
    return 0;
}

/* setmetatable without finalizers: Lua runs __gc with debug hooks off, so a finalizer could loop past
 * the instruction budget (and would run in lua_close). A metatable with __gc is refused. */
static int lua_setmetatable_safe(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE && lua_getfield(L, 2, "__gc") != LUA_TNIL)
        return luaL_error(L, "setmetatable: __gc finalizers are not allowed in specs");
    lua_settop(L, 2);
    lua_getfield(L, LUA_REGISTRYINDEX, "ndgen.setmetatable");
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

/* xpcall(f, handler, ...) whose handler runs after the call has failed, as an ordinary call: Lua runs a
 * message handler with debug hooks off when the error came from a hook, which would let it loop past the
 * instruction budget. The handler gets the error value; its own errors propagate. */
static int lua_xpcall_safe(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    int n = lua_gettop(L);
    lua_pushvalue(L, 1);
    for (int i = 3; i <= n; ++i)
        lua_pushvalue(L, i);
    if (lua_pcall(L, n - 2, LUA_MULTRET, 0) == LUA_OK) {
        lua_pushboolean(L, 1);
        lua_insert(L, n + 1);
        return lua_gettop(L) - n;
    }
    lua_pushvalue(L, 2);
    lua_insert(L, -2);
    lua_call(L, 1, 1);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/*
 * Lua's pattern matching runs in C, where the instruction budget cannot stop it, and backtracks: a
 * pattern with k quantifiers over an n-byte subject may take about n^k steps (more for gsub and gmatch,
 * which match from every position). The wrappers below refuse a call whose bound exceeds
 * PATTERN_BUDGET before it starts; the ones within it finish in well under a second.
 */
enum { PATTERN_BUDGET = 100 * 1000 * 1000 };

static double pattern_bound(size_t n, const char *pat, size_t m, bool plain, bool every_position)
{
    int k = 0;
    for (size_t i = 0; i < m && !plain; ++i) {
        if (pat[i] == '%')
            ++i; /* an escaped character is literal */
        else if (pat[i] == '*' || pat[i] == '+' || pat[i] == '-' || pat[i] == '?')
            ++k;
    }
    double bound = (double)(m + 1);
    for (int i = 0; i <= k; ++i) /* (n+1) positions per quantifier, and the start */
        bound *= (double)(n + 1);
    return every_position ? bound * (double)(n + 1) : bound;
}

/* Calls the library's original function name (kept in the registry table reg) with the arguments. */
static int call_original(lua_State *L, const char *reg, const char *name)
{
    lua_getfield(L, LUA_REGISTRYINDEX, reg);
    lua_getfield(L, -1, name);
    lua_insert(L, 1);
    lua_pop(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int pattern_call(lua_State *L, const char *name, bool every_position)
{
    size_t n, m;
    luaL_checklstring(L, 1, &n);
    const char *pat = luaL_checklstring(L, 2, &m);
    bool plain = strcmp(name, "find") == 0 && lua_toboolean(L, 4);
    if (pattern_bound(n, pat, m, plain, every_position) > PATTERN_BUDGET)
        return luaL_error(L, "string.%s: a %I-byte pattern over a %I-byte subject could backtrack past the "
                             "spec's budget; use a shorter subject or fewer repetitions", name, (lua_Integer)m,
                          (lua_Integer)n);
    return call_original(L, "ndgen.string", name);
}

static int lua_find_safe(lua_State *L) { return pattern_call(L, "find", false); }
static int lua_match_safe(lua_State *L) { return pattern_call(L, "match", false); }
static int lua_gmatch_safe(lua_State *L) { return pattern_call(L, "gmatch", true); }
static int lua_gsub_safe(lua_State *L) { return pattern_call(L, "gsub", true); }

/*
 * Other C loops whose length an argument sets, not memory: string.rep of an empty string and separator
 * copies nothing n times (n up to 2^63), and table.move, insert, remove, sort and concat walk a span that
 * the arguments or a length (a border of 2^40 takes 41 entries, or a __len metamethod) can make
 * astronomically long. Empty repetitions return "" at once; a table call over more than SPAN_BUDGET
 * elements is refused before it starts (the spans a spec needs are thousands).
 */
enum { SPAN_BUDGET = 1 << 24 };

static int lua_rep_safe(lua_State *L)
{
    size_t l, lsep = 0;
    luaL_checklstring(L, 1, &l);
    luaL_checkinteger(L, 2);
    if (!lua_isnoneornil(L, 3))
        luaL_checklstring(L, 3, &lsep);
    if (l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    return call_original(L, "ndgen.string", "rep");
}

/* Refuses a table.name call over the elements first .. last (none when last < first). */
static void check_span(lua_State *L, const char *name, lua_Integer first, lua_Integer last)
{
    if (last >= first && (lua_Unsigned)last - (lua_Unsigned)first >= SPAN_BUDGET)
        luaL_error(L, "table.%s: %I elements are more than one call may walk in a spec (%d)", name,
                   (lua_Integer)((lua_Unsigned)last - (lua_Unsigned)first + 1), SPAN_BUDGET);
}

static int lua_move_safe(lua_State *L)
{
    check_span(L, "move", luaL_checkinteger(L, 2), luaL_checkinteger(L, 3));
    return call_original(L, "ndgen.table", "move");
}

static int lua_insert_safe(lua_State *L)
{
    if (lua_gettop(L) == 3) /* insert(t, pos, v) shifts pos .. #t up */
        check_span(L, "insert", luaL_checkinteger(L, 2), luaL_len(L, 1));
    return call_original(L, "ndgen.table", "insert");
}

static int lua_remove_safe(lua_State *L)
{
    if (!lua_isnoneornil(L, 2)) /* remove(t, pos) shifts pos + 1 .. #t down */
        check_span(L, "remove", luaL_checkinteger(L, 2), luaL_len(L, 1));
    return call_original(L, "ndgen.table", "remove");
}

static int lua_sort_safe(lua_State *L)
{
    check_span(L, "sort", 1, luaL_len(L, 1));
    return call_original(L, "ndgen.table", "sort");
}

static int lua_concat_safe(lua_State *L)
{
    const lua_Integer first = luaL_optinteger(L, 3, 1);
    check_span(L, "concat", first, lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4));
    return call_original(L, "ndgen.table", "concat");
}

/* Replaces the functions of safe[] in the library at index lib in place, so that method calls on
 * strings, which go through the same table, are bounded too; the originals go to the registry's reg. */
static void bound_library(lua_State *L, int lib, const char *reg, const luaL_Reg *safe)
{
    lib = lua_absindex(L, lib);
    lua_newtable(L);
    for (const luaL_Reg *r = safe; r->name; ++r) {
        lua_getfield(L, lib, r->name);
        lua_setfield(L, -2, r->name);
    }
    lua_setfield(L, LUA_REGISTRYINDEX, reg);
    lua_pushvalue(L, lib);
    luaL_setfuncs(L, safe, 0);
    lua_pop(L, 1);
}

static void bound_c_loops(lua_State *L, int string_lib, int table_lib)
{
    static const luaL_Reg strings[] = {{"find", lua_find_safe}, {"match", lua_match_safe},
                                       {"gmatch", lua_gmatch_safe}, {"gsub", lua_gsub_safe},
                                       {"rep", lua_rep_safe}, {NULL, NULL}};
    static const luaL_Reg tables[] = {{"move", lua_move_safe}, {"insert", lua_insert_safe},
                                      {"remove", lua_remove_safe}, {"sort", lua_sort_safe},
                                      {"concat", lua_concat_safe}, {NULL, NULL}};
    table_lib = lua_absindex(L, table_lib);
    bound_library(L, string_lib, "ndgen.string", strings);
    bound_library(L, table_lib, "ndgen.table", tables);
}

/* math.randomseed with a seed, as Lua's; without one Lua 5.4 seeds from the clock and an address, which
 * would make a spec's output differ from run to run, so that is an error. */
static int lua_randomseed_fixed(lua_State *L)
{
    if (lua_gettop(L) == 0)
        return luaL_error(L, "math.randomseed needs a seed in a spec: without one it seeds from the clock, and "
                             "a spec must generate the same bytes on every run");
    lua_getfield(L, LUA_REGISTRYINDEX, "ndgen.randomseed");
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* Seeds the math library (at index lib) with a constant, which Lua 5.4 seeds from the clock when it
 * opens, and replaces its randomseed (the original goes to the registry): math.random draws the same
 * numbers on every run, so a spec using it generates the same bytes. */
static void fix_random(lua_State *L, int lib)
{
    lib = lua_absindex(L, lib);
    lua_getfield(L, lib, "randomseed");
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "ndgen.randomseed");
    lua_pushinteger(L, 0);
    lua_call(L, 1, 0);
    lua_pushcfunction(L, lua_randomseed_fixed);
    lua_setfield(L, lib, "randomseed");
}

static int lua_print_stderr(lua_State *L)
{
    for (int i = 1, n = lua_gettop(L); i <= n; ++i) {
        fprintf(stderr, "%s%s", i > 1 ? "\t" : "", luaL_tolstring(L, i, NULL));
        lua_pop(L, 1);
    }
    fputc('\n', stderr);
    return 0;
}

/* The dtypes as lists a spec loops over, in ND_DTYPES' order (so a spec's ops come out in the same
 * order every run): `dtypes`, every one, and `floating_dtypes`, those computed as f32; and
 * `dtype_storage`, each one's storage C type. A dtype added to the table reaches every spec that loops
 * over these. */
static void push_dtype_lists(lua_State *L)
{
    lua_newtable(L);
    for (int t = 0; t < ND_DTYPE_COUNT; ++t) {
        lua_pushstring(L, nd_dtype_ctype((nd_dtype)t));
        lua_setfield(L, -2, nd_dtype_name((nd_dtype)t));
    }
    lua_setfield(L, -2, "dtype_storage");
    lua_newtable(L);
    lua_newtable(L);
    for (int t = 0, n = 0, nf = 0; t < ND_DTYPE_COUNT; ++t) {
        lua_pushstring(L, nd_dtype_name((nd_dtype)t));
        lua_rawseti(L, -3, ++n);
        if (nd_dtype_floating((nd_dtype)t)) {
            lua_pushstring(L, nd_dtype_name((nd_dtype)t));
            lua_rawseti(L, -2, ++nf);
        }
    }
    lua_setfield(L, -3, "floating_dtypes");
    lua_setfield(L, -2, "dtypes");
}

static void build_sandbox(lua_State *L, const char *spec_dir)
{
    static const char *const base_names[] = {"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal",
                                             "rawget", "rawlen", "rawset", "select", "getmetatable",
                                             "tonumber", "tostring", "type"};
    luaL_requiref(L, "_G", luaopen_base, 1);
    luaL_requiref(L, "string", luaopen_string, 0);
    luaL_requiref(L, "table", luaopen_table, 0);
    luaL_requiref(L, "math", luaopen_math, 0);
    fix_random(L, -1);
    bound_c_loops(L, -3, -2); /* string and table, under math */
    lua_newtable(L); /* the environment */
    for (size_t i = 0; i < sizeof base_names / sizeof *base_names; ++i) {
        lua_getfield(L, -5, base_names[i]);
        lua_setfield(L, -2, base_names[i]);
    }
    static const char *const libs[] = {"string", "table", "math"}; /* at -4, -3, -2 */
    for (int i = 0; i < 3; ++i) {
        lua_pushvalue(L, -4 + i);
        lua_setfield(L, -2, libs[i]);
    }
    static const luaL_Reg funcs[] = {{"op", lua_op},
                                     {"include", lua_include},
                                     {"print", lua_print_stderr},
                                     {"setmetatable", lua_setmetatable_safe},
                                     {"xpcall", lua_xpcall_safe},
                                     {NULL, NULL}};
    luaL_setfuncs(L, funcs, 0);
    push_dtype_lists(L);
    lua_getfield(L, -5, "setmetatable"); /* the real one, for lua_setmetatable_safe */
    lua_setfield(L, LUA_REGISTRYINDEX, "ndgen.setmetatable");
    lua_setfield(L, LUA_REGISTRYINDEX, "ndgen.env");
    lua_pop(L, 4);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_OPS);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_DEPS);
    lua_pushstring(L, spec_dir);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_DIR);
}

/* ---------------------------------------------------------------- field access with located errors */

/* Where conversion errors are reported: "file:line: op 'x': target 2: operand 'a': " */
typedef struct ctx {
    lua_State *L;
    const char *file;
    int line;
    char where[256];
    nd_error *err;
} ctx;

#define FAIL(c, ...) ctx_fail(c, __VA_ARGS__)

__attribute__((format(printf, 2, 3))) static int ctx_fail(ctx *c, const char *fmt, ...)
{
    char msg[ND_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nd_fail(c->err, "%s:%d: %s%s", c->file, c->line, c->where, msg);
}

/* Pushes t[key] (raw) and returns its type; the caller pops. */
static int field(lua_State *L, int t, const char *key)
{
    lua_pushstring(L, key);
    return lua_rawget(L, t < 0 ? t - 1 : t);
}

static const char *type_name(lua_State *L, int idx) { return lua_typename(L, lua_type(L, idx)); }

/* The length (border) of the list at idx in *n; an error when it is past max: a border can be 2^40
 * with 41 entries, which an int would truncate to another list's length. */
static int list_len(ctx *c, int idx, int max, const char *what, int *n)
{
    const lua_Unsigned len = lua_rawlen(c->L, idx);
    *n = 0;
    if (len > (lua_Unsigned)max)
        return FAIL(c, "%s has %llu entries; at most %d", what, (unsigned long long)len, max);
    *n = (int)len;
    return 0;
}

/* A string field; NULL when absent and not required. Numbers are accepted as their text. */
static int get_string(ctx *c, int t, const char *key, bool required, char **out)
{
    int ty = field(c->L, t, key);
    *out = NULL;
    if (ty == LUA_TNIL) {
        lua_pop(c->L, 1);
        return required ? FAIL(c, "missing field '%s'", key) : 0;
    }
    if (ty != LUA_TSTRING && ty != LUA_TNUMBER) {
        int rc = FAIL(c, "field '%s' must be a string, not a %s", key, type_name(c->L, -1));
        lua_pop(c->L, 1);
        return rc;
    }
    size_t len;
    const char *text = lua_tolstring(c->L, -1, &len);
    if (strlen(text) != len) {
        lua_pop(c->L, 1);
        return FAIL(c, "field '%s' holds a NUL character", key);
    }
    *out = ndg_strdup(text);
    lua_pop(c->L, 1);
    return 0;
}

/* An optional boolean field, false when absent. */
static int get_bool(ctx *c, int t, const char *key, bool *out)
{
    int ty = field(c->L, t, key);
    *out = ty == LUA_TBOOLEAN && lua_toboolean(c->L, -1);
    lua_pop(c->L, 1);
    return ty == LUA_TNIL || ty == LUA_TBOOLEAN ? 0 : FAIL(c, "field '%s' must be true or false", key);
}

/* A name that reaches C as an identifier, within a symbol's length. */
static int check_name(ctx *c, const char *what, const char *name)
{
    bool ok = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_';
    for (const char *p = name; *p && ok; ++p)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok)
        return FAIL(c, "%sthe name must be a C identifier", what);
    if (strlen(name) > NDG_MAX_NAME)
        return FAIL(c, "%sthe name is %zu characters long; at most %d fit in a kernel's symbol", what, strlen(name),
                    NDG_MAX_NAME);
    return 0;
}

/* A parameter's C text must stay on its #define line: no line break of any kind, no trailing
 * backslash (which would join the next line) and no comment left open. */
static int check_c_line(ctx *c, const char *name, const char *v)
{
    for (const char *p = strstr(v, "??"); p; p = strstr(p + 1, "??")) /* anywhere, strings included */
        if (p[2] && strchr("=(/)'<!>-", p[2]))
            return FAIL(c, "parameter '%s': '??%c' at column %d is a trigraph, which ndgen's parser (C17) and "
                           "compilers in GNU mode read differently", name, p[2], (int)(p - v) + 1);
    for (const char *p = v; *p; ++p) {
        unsigned char ch = (unsigned char)*p;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return FAIL(c, "parameter '%s': character 0x%02x at column %d; the value must be one line of C", name, ch,
                        (int)(p - v) + 1);
        if (ch == '"' || ch == '\'') {
            const char *q = p + 1;
            while (*q && *q != (char)ch)
                q += q[0] == '\\' && q[1] ? 2 : 1;
            if (!*q)
                return FAIL(c, "parameter '%s': a %s literal is not closed", name, ch == '"' ? "string" : "character");
            p = q;
        } else if (ch == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            if (!end)
                return FAIL(c, "parameter '%s': a /* comment is not closed", name);
            p = end + 1;
        } else if (ch == '\\' && p[strspn(p + 1, " \t") + 1] == '\0') {
            return FAIL(c, "parameter '%s': a trailing backslash would join the next line", name);
        }
    }
    return 0;
}


/* partial = true (a pending sum) or a list of reduce ops such as {"sum", "max"}: the Partial values the
 * operand may be, as a mask of nd_reduce bits; 0 when absent or false. */
static int get_partial(ctx *c, int t, const char *name, unsigned *mask)
{
    lua_State *L = c->L;
    int ty = field(L, t, "partial"), rc = 0;
    *mask = 0;
    if (ty == LUA_TBOOLEAN) {
        *mask = lua_toboolean(L, -1) ? 1u << ND_REDUCE_SUM : 0;
    } else if (ty == LUA_TTABLE) {
        int n;
        rc = list_len(c, -1, 64, "field 'partial'", &n);
        for (int i = 1; i <= n && !rc; ++i) {
            int r = lua_rawgeti(L, -1, i) == LUA_TSTRING ? nd_reduce_parse(lua_tostring(L, -1)) : -1;
            char list[64];
            if (r < 0)
                rc = FAIL(c, "operand '%s': partial[%d] must be one of %s", name, i, nd_reduce_list(list, sizeof list, false));
            *mask |= r >= 0 ? 1u << r : 0;
            lua_pop(L, 1);
        }
        if (!rc && !*mask)
            rc = FAIL(c, "operand '%s': partial = {} allows no reduce op; leave it out instead", name);
    } else if (ty != LUA_TNIL) {
        rc = FAIL(c, "operand '%s': partial must be true (a pending sum) or a list of reduce ops such as "
                     "{\"sum\", \"max\"}, not a %s", name, type_name(L, -1));
    }
    lua_pop(L, 1);
    return rc;
}

/* Fails on any key of table t not in allowed[] (a typo would otherwise be silently ignored). */
static int check_keys(ctx *c, int t, const char *const *allowed, const char *what)
{
    lua_State *L = c->L;
    int abs = lua_absindex(L, t);
    lua_pushnil(L);
    while (lua_next(L, abs)) {
        lua_pop(L, 1);
        bool ok = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (const char *const *a = allowed; *a && !ok; ++a)
                ok = strcmp(*a, lua_tostring(L, -1)) == 0;
        if (!ok) {
            int rc = FAIL(c, "unknown %s field '%s'", what, luaL_tolstring(L, -1, NULL));
            lua_pop(L, 2);
            return rc;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- conversion */

/* The text a spec value states for a field, as a command line would give it: a string as is, an
 * integer in decimal, a list of integers as "3,7,5". Fails, located, on any other value. */
static int field_text(ctx *c, const char *key, ndg_buf *b)
{
    lua_State *L = c->L;
    int ty = lua_type(L, -1);
    if (ty == LUA_TSTRING || (ty == LUA_TNUMBER && lua_isinteger(L, -1))) {
        ndg_buf_printf(b, "%s", lua_tostring(L, -1));
        return 0;
    }
    if (ty != LUA_TTABLE)
        return FAIL(c, "field '%s' must be a string, an integer or a list of integers such as {3, 7, 5}, not %s", key,
                    ty == LUA_TNUMBER ? "a fraction" : type_name(L, -1));
    const lua_Unsigned dims = lua_rawlen(L, -1);
    if (dims < 1 || dims > ND_MAX_RANK)
        return FAIL(c, "field '%s' has %llu dims; give 1 to %d", key, (unsigned long long)dims, ND_MAX_RANK);
    const int n = (int)dims;
    for (int i = 1; i <= n; ++i) {
        int isint;
        lua_rawgeti(L, -1, i);
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        if (!isint) {
            int rc = FAIL(c, "%s[%d] must be an integer, not %s", key, i, luaL_tolstring(L, -1, NULL));
            lua_pop(L, 2);
            return rc;
        }
        lua_pop(L, 1);
        ndg_buf_printf(b, "%s%lld", i > 1 ? "," : "", (long long)v);
    }
    return 0;
}

/* The value at the top of the stack for field which, stored in f (texts owns its copy). */
static int set_field(ctx *c, int which, nd_dist_flags *f, char **texts)
{
    lua_State *L = c->L;
    const char *key = nd_dist_flag_fields[which];
    if (nd_dist_flag_is_switch(which)) {
        if (lua_type(L, -1) != LUA_TBOOLEAN)
            return FAIL(c, "field '%s' must be true or false, not a %s", key, type_name(L, -1));
        if (lua_toboolean(L, -1))
            nd_dist_flags_set(f, which, NULL);
        return 0;
    }
    ndg_buf b = {0};
    if (field_text(c, key, &b)) {
        free(b.data);
        return -1;
    }
    texts[which] = b.data ? b.data : ndg_strdup("");
    nd_dist_flags_set(f, which, texts[which]);
    return 0;
}

/* The distribution table at t as the fields a command line gives (ND_DIST_FLAGS, keyed by field name):
 * one conversion and one set of checks for specs and flags alike. */
static int table_flags(ctx *c, int t, nd_dist_flags *f, char **texts)
{
    lua_State *L = c->L;
    int abs = lua_absindex(L, t), rc = 0;
    lua_pushnil(L);
    while (!rc && lua_next(L, abs)) {
        int which = lua_type(L, -2) == LUA_TSTRING ? nd_dist_flag_field_index(lua_tostring(L, -2)) : -1;
        if (which < 0) {
            lua_pushvalue(L, -2);
            rc = FAIL(c, "unknown distribution field '%s'", luaL_tolstring(L, -1, NULL));
            lua_pop(L, 2);
        } else {
            rc = set_field(c, which, f, texts);
        }
        lua_pop(L, 1);
    }
    if (rc)
        lua_pop(L, 1); /* the key lua_next left */
    return rc;
}

/* The distribution table at t, for an operand of dtype (the table's own dtype, if any, must agree). */
static int convert_dist(ctx *c, int t, nd_dtype dtype, nd_dist *out)
{
    nd_dist_flags f = {.spec_keys = true};
    char *texts[ND_DIST_FLAG_COUNT] = {NULL};
    nd_error merr;
    nd_dtype given = dtype;
    int rc = table_flags(c, t, &f, texts);
    if (!rc && f.dtype && nd_parse_dtype("dtype", f.dtype, &given, &merr))
        rc = FAIL(c, "%s", merr.msg);
    else if (!rc && given != dtype)
        rc = FAIL(c, "dtype %s differs from the operand's dtype %s", nd_dtype_name(given), nd_dtype_name(dtype));
    f.dtype = nd_dtype_name(dtype);
    if (!rc && nd_dist_from_flags(&f, out, &merr))
        rc = FAIL(c, "%s", merr.msg);
    for (int i = 0; i < ND_DIST_FLAG_COUNT; ++i)
        free(texts[i]);
    return rc;
}

/* Index notation: letters, each at most once, and at most one "...". */
static int check_index(ctx *c, const ndg_operand *o)
{
    const char *ix = o->index, *dots = strstr(ix, "...");
    if (dots && strstr(dots + 3, "..."))
        return FAIL(c, "operand '%s': index '%s' has more than one '...'", o->name, ix);
    for (const char *p = ix; *p; ++p) {
        if (dots && p >= dots && p < dots + 3)
            continue;
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z'))
            return FAIL(c, "operand '%s': index '%s': '%c' at column %d is not a letter or part of '...'", o->name,
                        ix, *p, (int)(p - ix) + 1);
        if (strchr(p + 1, *p))
            return FAIL(c, "operand '%s': index '%s' repeats '%c'; each axis appears once per operand", o->name, ix, *p);
    }
    return 0;
}

static int convert_operands(ctx *c, int t, const char *key, bool output, ndg_op *op)
{
    static const char *const keys[] = {"name", "dtype", "index", "partial", NULL};
    lua_State *L = c->L;
    if (field(L, t, key) != LUA_TTABLE) {
        int rc = FAIL(c, "field '%s' must be a list of operands such as {{name = \"a\", dtype = \"f32\", index = \"ij\"}}",
                      key);
        lua_pop(L, 1);
        return rc;
    }
    char what[NDG_MAX_NAME + 16];
    snprintf(what, sizeof what, "field '%s'", key);
    int n, rc = list_len(c, -1, NDG_MAX_OPERANDS, what, &n);
    for (int i = 1; i <= n && !rc; ++i) {
        if (op->noperands == NDG_MAX_OPERANDS) {
            rc = FAIL(c, "more than %d operands", NDG_MAX_OPERANDS);
            break;
        }
        ndg_operand *o = &op->operands[op->noperands];
        char *dtype = NULL;
        nd_error perr;
        if (lua_rawgeti(L, -1, i) != LUA_TTABLE)
            rc = FAIL(c, "%s[%d] must be a table", key, i);
        else if (!(rc = check_keys(c, -1, keys, "operand")) && !(rc = get_string(c, -1, "name", true, &o->name)) &&
                 !(rc = get_string(c, -1, "index", false, &o->index)) && !(rc = get_partial(c, -1, o->name, &o->partial)) &&
                 !(rc = get_string(c, -1, "dtype", true, &dtype)))
            rc = nd_parse_dtype("dtype", dtype, &o->dtype, &perr) ? FAIL(c, "operand '%s': %s", o->name, perr.msg) : 0;
        free(dtype);
        o->output = output;
        if (!rc && !o->index)
            o->index = ndg_strdup("...");
        if (!rc)
            rc = check_index(c, o);
        ++op->noperands;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return rc;
}

/* Output indices must each come from some input: einsum cannot invent an axis. */
static int check_output_indices(ctx *c, const ndg_op *op)
{
    for (int k = 0; k < op->noperands; ++k) {
        if (!op->operands[k].output)
            continue;
        for (const char *p = op->operands[k].index; *p; ++p) {
            if (*p == '.')
                continue;
            bool found = false;
            for (int i = 0; i < op->noperands && !found; ++i)
                found = !op->operands[i].output && strchr(op->operands[i].index, *p);
            if (!found)
                return FAIL(c, "operand '%s': index '%c' appears only in the output", op->operands[k].name, *p);
        }
    }
    return 0;
}

static int param_order(const void *a, const void *b)
{
    return strcmp(((const ndg_param *)a)->name, ((const ndg_param *)b)->name);
}

/* The op's params, sorted by name: a Lua table walks in hash order, which changes from run to run, and
 * the generated file (its #defines) must not. */
static int convert_params(ctx *c, int t, ndg_op *op)
{
    lua_State *L = c->L;
    int ty = field(L, t, "params"), rc = 0;
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (ty != LUA_TTABLE) {
        rc = FAIL(c, "field 'params' must be a table of NAME = \"C text\"");
        lua_pop(L, 1);
        return rc;
    }
    lua_pushnil(L);
    while (!rc && lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING || (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER)) {
            rc = FAIL(c, "params: each entry must be NAME = \"C text\"");
        } else if (op->nparams == NDG_MAX_PARAMS) {
            rc = FAIL(c, "params: more than %d", NDG_MAX_PARAMS);
        } else {
            const char *name = lua_tostring(L, -2);
            size_t len;
            const char *value = lua_tolstring(L, -1, &len);
            char what[128];
            snprintf(what, sizeof what, "parameter '%.64s': ", name);
            rc = check_name(c, what, name);
            if (!rc && strlen(value) != len)
                rc = FAIL(c, "parameter '%s': the value holds a NUL character", name);
            if (!rc)
                rc = check_c_line(c, name, value);
            if (!rc) {
                op->params[op->nparams].name = ndg_strdup(name);
                op->params[op->nparams].value = ndg_strdup(value);
                ++op->nparams;
            }
        }
        lua_pop(L, 1);
    }
    if (rc)
        lua_pop(L, 1); /* the key lua_next left */
    lua_pop(L, 1);
    qsort(op->params, (size_t)op->nparams, sizeof *op->params, param_order);
    return rc;
}

/* Operand i's distribution in target table t: t[name], else t.all. */
static int convert_target_operand(ctx *c, int t, const ndg_op *op, int i, nd_dist *out)
{
    char where[sizeof c->where];
    size_t n = strlen(c->where);
    memcpy(where, c->where, sizeof where);
    int ty = field(c->L, t, op->operands[i].name);
    if (ty == LUA_TNIL) {
        lua_pop(c->L, 1);
        ty = field(c->L, t, "all");
    }
    snprintf(c->where + n, sizeof c->where - n, "operand '%s': ", op->operands[i].name);
    int rc = ty == LUA_TTABLE ? convert_dist(c, -1, op->operands[i].dtype, out)
             : ty == LUA_TNIL ? FAIL(c, "no distribution (give '%s' or 'all')", op->operands[i].name)
                              : FAIL(c, "the distribution must be a table, not a %s", type_name(c->L, -1));
    lua_pop(c->L, 1);
    memcpy(c->where, where, sizeof where);
    return rc;
}

/* A model message without its leading "op 'NAME': ", which the spec's own prefix already says. */
static const char *without_op(const ndg_op *op, const char *msg)
{
    char prefix[NDG_MAX_NAME + 16];
    snprintf(prefix, sizeof prefix, "op '%s': ", op->name);
    return strncmp(msg, prefix, strlen(prefix)) == 0 ? msg + strlen(prefix) : msg;
}

/* One fixed value of a target's `scalars` table (at the top of the stack) for declared scalar d, into
 * v[0] (a named scalar) or v[0..n) (a list, a sequence of axes); *n gets how many. */
static int fixed_value(ctx *c, const ndg_op *op, const nd_scalar_decl *d, double *v, int *n)
{
    lua_State *L = c->L;
    nd_error perr;
    if (d->type != ND_SCALAR_AXES && d->type != ND_SCALAR_PERM) {
        if (lua_type(L, -1) != LUA_TNUMBER) /* not lua_isnumber, which takes the string "1e-5" too */
            return FAIL(c, "scalars: '%s' must be a number%s, not a %s", d->name,
                        d->type == ND_SCALAR_BOOL ? " (0 or 1)" : "", type_name(L, -1));
        *v = lua_tonumber(L, -1);
        if (lua_isinteger(L, -1) && !(*v >= -0x1p63 && *v < 0x1p63 && (lua_Integer)*v == lua_tointeger(L, -1)))
            return FAIL(c, "scalars: '%s' = %lld is not exact in a double, as launch values travel", d->name,
                        (long long)lua_tointeger(L, -1)); /* 2^53 + 1 would be fixed as 2^53 */
        *n = 1;
        return nd_scalar_check_value(d, op->name, *v, &perr) ? FAIL(c, "scalars: %s", without_op(op, perr.msg)) : 0;
    }
    const lua_Unsigned axes = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
    const int len = axes > ND_MAX_RANK ? -1 : (int)axes;
    if (len < 1)
        return FAIL(c, "scalars: '%s' must be a list of 1 to %d axes, such as {0, 2}", d->name, ND_MAX_RANK);
    for (int i = 0; i < len; ++i) {
        int isnum = lua_rawgeti(L, -1, i + 1) == LUA_TNUMBER;
        v[i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (!isnum)
            return FAIL(c, "scalars: '%s' must be a list of axes (integers)", d->name);
    }
    *n = len;
    return 0;
}

/* A target's `scalars = {eps = 1e-5, axes = {0, 2}}`: launch scalars its kernel takes as constants. */
static int convert_fixed_scalars(ctx *c, int t, const ndg_op *op, ndg_target *target)
{
    lua_State *L = c->L;
    const nd_scalars *s = &op->decl;
    int list = nd_scalars_list(s), named = list < 0 ? s->n : list, rc = 0;
    if (field(L, t, "scalars") == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (!s->n || !lua_istable(L, -1)) {
        lua_pop(L, 1);
        return s->n ? FAIL(c, "scalars: give a table of name = value, such as {eps = 1e-5}")
                    : FAIL(c, "scalars: op '%s' declares no scalars", op->name);
    }
    for (int i = 0; i < named; ++i)
        target->scalars[i] = NAN;
    target->nscalars = named;
    lua_pushnil(L);
    while (!rc && lua_next(L, -2)) { /* the table, a key, its value */
        int k = -1, n = 0;
        for (int i = 0; i < s->n && lua_type(L, -2) == LUA_TSTRING; ++i)
            k = strcmp(s->d[i].name, lua_tostring(L, -2)) == 0 ? i : k;
        if (k < 0)
            rc = FAIL(c, "scalars: '%s' is not a scalar op '%s' declares",
                      lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "(a key not a name)", op->name);
        else
            rc = fixed_value(c, op, &s->d[k], &target->scalars[k], &n);
        if (!rc && k == list)
            target->nscalars = named + n;
        lua_pop(L, rc ? 2 : 1); /* on failure the key too: the walk ends */
    }
    lua_pop(L, 1);
    bool none = target->nscalars == named;
    for (int i = 0; i < named && none; ++i)
        none = isnan(target->scalars[i]);
    if (none) /* `scalars = {}` fixes nothing: its kernel serves launches that give no values too */
        target->nscalars = 0;
    return rc ? -1 : 0;
}

static int convert_target(ctx *c, int t, const ndg_op *op, ndg_target *target)
{
    lua_State *L = c->L;
    int abs = lua_absindex(L, t);
    lua_pushnil(L);
    while (lua_next(L, abs)) {
        lua_pop(L, 1); /* every key must name an operand, or be 'all', 'fixed' or 'scalars' */
        bool known = lua_type(L, -1) == LUA_TSTRING && (strcmp(lua_tostring(L, -1), "all") == 0 ||
                                                        strcmp(lua_tostring(L, -1), "fixed") == 0 ||
                                                        strcmp(lua_tostring(L, -1), "scalars") == 0);
        for (int i = 0; i < op->noperands && !known && lua_type(L, -1) == LUA_TSTRING; ++i)
            known = strcmp(op->operands[i].name, lua_tostring(L, -1)) == 0;
        if (!known) {
            int rc = FAIL(c, "'%s' is not an operand of op '%s'", luaL_tolstring(L, -1, NULL), op->name);
            lua_pop(L, 2);
            return rc;
        }
    }
    target->line = c->line;
    target->fixed = NDA_FIXED_ALL;
    int ty = field(L, abs, "fixed"); /* a set (fixed.c), absent: "all" */
    nd_error why;
    int rc = ty == LUA_TNIL      ? 0
             : ty != LUA_TSTRING ? FAIL(c, "field 'fixed' must be a string naming a set of parameters, not a %s",
                                        type_name(L, -1))
             : ndg_fixed_parse(lua_tostring(L, -1), &target->fixed, &why) ? FAIL(c, "%s", why.msg)
                                                                         : 0;
    lua_pop(L, 1);
    if (rc)
        return -1;
    for (int i = 0; i < op->noperands; ++i)
        if (convert_target_operand(c, abs, op, i, &target->dist[i]))
            return -1;
    return convert_fixed_scalars(c, abs, op, target);
}

static int convert_targets(ctx *c, int t, ndg_op *op)
{
    lua_State *L = c->L;
    int ty = field(L, t, "targets"), rc = 0;
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return 0; /* an op with no targets has only its generic kernel */
    }
    if (ty != LUA_TTABLE) {
        rc = FAIL(c, "field 'targets' must be a list of targets, not a %s", type_name(L, -1));
        lua_pop(L, 1);
        return rc;
    }
    int n;
    if ((rc = list_len(c, -1, MAX_TARGETS, "field 'targets'", &n)) != 0) {
        lua_pop(L, 1);
        return rc;
    }
    op->targets = ndg_calloc((size_t)(n ? n : 1), sizeof *op->targets);
    size_t len = strlen(c->where);
    for (int i = 1; i <= n && !rc; ++i) {
        snprintf(c->where + len, sizeof c->where - len, "target %d: ", i);
        if (lua_rawgeti(L, -1, i) != LUA_TTABLE)
            rc = FAIL(c, "must be a table of operand = distribution");
        else
            rc = convert_target(c, -1, op, &op->targets[op->ntargets]);
        op->ntargets += !rc;
        lua_pop(L, 1);
    }
    c->where[len] = '\0';
    lua_pop(L, 1);
    return rc;
}

/* scalars = "eps: f32 in (0, 1], axes: axes(x)" (nd_scalars_parse): kept canonical, as libraries record
 * it; a list's input must be an input of the op. */
static int check_scalars(ctx *c, ndg_op *op)
{
    nd_error perr;
    if (!op->scalars)
        return 0;
    if (nd_scalars_parse(op->scalars, &op->decl, &perr))
        return FAIL(c, "%s", perr.msg);
    int list = nd_scalars_list(&op->decl);
    bool input = list < 0;
    for (int i = 0; i < op->noperands && !input; ++i)
        input = !op->operands[i].output && strcmp(op->operands[i].name, op->decl.d[list].of) == 0;
    if (!input)
        return FAIL(c, "scalars '%s': the list's input '%s' must be an input of op '%s'", op->scalars,
                    op->decl.d[list].of, op->name);
    char text[1024];
    nd_scalars_text(&op->decl, text, sizeof text);
    free(op->scalars);
    op->scalars = op->decl.n ? ndg_strdup(text) : NULL;
    return 0;
}

/* requires = "same_paging(in, out)" or a list of such: kept as "same_paging(in,out);..." once each
 * relation and operand is known. */
static int convert_requires(ctx *c, int t, ndg_op *op)
{
    lua_State *L = c->L;
    int ty = field(L, t, "requires"), rc = 0;
    const char *names[NDG_MAX_OPERANDS];
    for (int i = 0; i < op->noperands; ++i)
        names[i] = op->operands[i].name;
    if (ty == LUA_TSTRING) { /* one relation: as a list of one */
        lua_createtable(L, 1, 0);
        lua_insert(L, -2);
        lua_rawseti(L, -2, 1);
    } else if (ty != LUA_TTABLE) {
        lua_pop(L, 1);
        return ty == LUA_TNIL ? 0 : FAIL(c, "field 'requires' must be a string such as \"same_paging(in, out)\" or a list of them");
    }
    ndg_buf b = {0};
    int n;
    rc = list_len(c, -1, 256, "field 'requires'", &n);
    for (int i = 1; i <= n && !rc; ++i) {
        nd_op_require q;
        nd_error perr;
        if (lua_rawgeti(L, -1, i) != LUA_TSTRING) {
            rc = FAIL(c, "requires[%d] must be a string such as \"same_paging(in, out)\"", i);
        } else if (nd_op_requires_parse(lua_tostring(L, -1), names, op->noperands, &q, &perr)) {
            rc = FAIL(c, "%s", perr.msg);
        } else {
            const char *text = lua_tostring(L, -1);
            ndg_buf_printf(&b, "%s%.*s(%s,%s)", b.len ? ";" : "", (int)strcspn(text, "( "), text, names[q.operand[0]],
                           names[q.operand[1]]);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (rc || !b.len)
        ndg_buf_free(&b);
    else
        op->requires = b.data;
    return rc;
}

/* A target's fixed list of axes against its input's and output's shapes, as each launch is checked. */
static int fixed_list_check(const ndg_op *op, const ndg_target *t, nd_error *err)
{
    int list = nd_scalars_list(&op->decl), x = -1, out = op->noperands - 1;
    if (list < 0 || t->nscalars <= list)
        return 0;
    for (int i = 0; i < op->noperands; ++i)
        x = strcmp(op->operands[i].name, op->decl.d[list].of) == 0 ? i : x;
    return nd_scalars_check_list(&op->decl.d[list], op->name, op->operands[out].name, &t->dist[x].spec,
                                 &t->dist[out].spec, t->scalars + list, t->nscalars - list, err);
}

/* Every target against the op's contract: the indices' ranks, axis sizes and broadcasting, and what
 * the template requires; the same check the runtime makes at each launch. */
static int check_targets(ctx *c, const ndg_op *op)
{
    const char *names[NDG_MAX_OPERANDS], *indices[NDG_MAX_OPERANDS];
    int outputs = 0;
    for (int i = 0; i < op->noperands; ++i) {
        names[i] = op->operands[i].name;
        indices[i] = op->operands[i].index;
        outputs += op->operands[i].output;
    }
    bool list = nd_scalars_list(&op->decl) >= 0; /* the output's shape comes from the scalars */
    nd_op_sig sig = {op->name, op->noperands, outputs, names, indices, list ? op->scalars : NULL, op->requires};
    for (int t = 0; t < op->ntargets; ++t) {
        const nd_dist *d[NDG_MAX_OPERANDS];
        nd_error perr;
        for (int i = 0; i < op->noperands; ++i)
            d[i] = &op->targets[t].dist[i];
        if (nd_op_check_shapes(&sig, d, &perr))
            return FAIL(c, "target %d: %s", t + 1, without_op(op, perr.msg));
        if (fixed_list_check(op, &op->targets[t], &perr))
            return FAIL(c, "target %d: scalars: %s", t + 1, without_op(op, perr.msg));
    }
    return 0;
}

static int resolve_template(ctx *c, const char *name, const ndg_spec_env *env, ndg_op *op)
{
    if (name[0] == '/' || strstr(name, ".."))
        return FAIL(c, "template '%s': name a file inside a template folder", name);
    for (int i = 0; i < env->ntemplate_dirs; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", env->template_dirs[i], name);
        if (access(path, R_OK) == 0) {
            op->template_path = ndg_strdup(path);
            return 0;
        }
    }
    return FAIL(c, "unknown template '%s': not found in %s%s", name,
                env->ntemplate_dirs ? env->template_dirs[0] : "(no template folder given)",
                env->ntemplate_dirs > 1 ? " or the other template folders" : "");
}

/* A file named by a spec: inside the spec folder (as include() reads), else in a template folder. */
static int resolve_source(ctx *c, const char *name, const ndg_spec_env *env, char **out)
{
    char path[PATH_MAX + 256], real[PATH_MAX];
    struct stat st;
    if (name[0] == '/' || strstr(name, "..") || strchr(name, '\\'))
        return FAIL(c, "reference source '%s': name a file inside the spec folder or a template folder", name);
    lua_getfield(c->L, LUA_REGISTRYINDEX, REG_DIR); /* +1: the spec folder */
    snprintf(path, sizeof path, "%s/%s", lua_tostring(c->L, -1), name);
    lua_pop(c->L, 1);
    for (int i = -1; i < env->ntemplate_dirs; ++i) {
        if (i >= 0)
            snprintf(path, sizeof path, "%s/%s", env->template_dirs[i], name);
        if (realpath(path, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode)) {
            /* the real file must be inside the folder it was found in: a link out of it is refused, as
             * include's are */
            char dir[PATH_MAX];
            path[strlen(path) - strlen(name) - 1] = '\0';
            if (!realpath(path, dir) || strncmp(real, dir, strlen(dir)) != 0 || real[strlen(dir)] != '/')
                return FAIL(c, "reference source '%s': it resolves to %s, outside the folder %s it was found in", name,
                            real, path);
            *out = ndg_strdup(real);
            return 0;
        }
    }
    return FAIL(c, "reference source '%s': no such file in the spec folder or the template folders", name);
}

/* Each NDA_READS_KINDS row's bundled reference function, or template file (".c"). */
static const char *const reads_source[] = {
#define NDG_READS_REF(e, ref) ref,
    NDA_READS_KINDS(NDG_READS_REF)
#undef NDG_READS_REF
};

/* Whether row k names a template file rather than a reference function. */
static bool reads_row_is_template(int k)
{
    size_t n = strlen(reads_source[k]);
    return n > 2 && strcmp(reads_source[k] + n - 2, ".c") == 0;
}

/* What an output element of an op with this bundled reference function reads (NDA_READS_KINDS: the row
 * whose reference is the name, or its prefix when the row's ends in '_'); NDA_READS_WHOLE for any other.
 * Never POINTWISE: only a reference derived from EXPR is (convert_reference), not a function that
 * happens to be named "elementwise", which may read a stencil. */
static int reads_of(const char *reference)
{
    for (int k = 1; k < NDA_READS_COUNT && reference; ++k) {
        const char *ref = reads_source[k];
        size_t n = strlen(ref);
        if (k == NDA_READS_POINTWISE || reads_row_is_template(k))
            continue;
        if (ref[n - 1] == '_' ? strncmp(reference, ref, n) == 0 : strcmp(reference, ref) == 0)
            return k;
    }
    return NDA_READS_WHOLE;
}

/* Whether source (a path) is a file of the folder rel (NDGEN_REL_*) installed beside this ndgen (the
 * build tree mirrors the install); got[PATH_MAX] receives its resolved path, cut at the folder, and
 * *base points at its name there. */
static bool bundled_in(const char *source, const char *rel, char *got, const char **base)
{
    char dir[2 * PATH_MAX], want[PATH_MAX];
    if (nd_exe_relative(dir, sizeof dir, rel) || !realpath(dir, want) || !realpath(source, got))
        return false;
    char *slash = strrchr(got, '/');
    if (!slash)
        return false;
    *slash = '\0';
    *base = slash + 1;
    return strcmp(got, want) == 0;
}

/* Whether source (a resolved path) is a file of the bundled references: the reference/ folder of the
 * specs installed beside this ndgen. Only those are known to read what their names say; a user's
 * function of the same name is read whole. */
static bool bundled_reference(const char *source)
{
    char got[PATH_MAX];
    const char *base;
    return bundled_in(source, NDGEN_REL_SPECS "/reference", got, &base);
}

/* What an output element of an op without a reference reads, from its template: the NDA_READS_KINDS
 * row naming a bundled template file (one of the templates installed beside this ndgen, which reads
 * what its row says: all_reduce.c combines each output element's coordinates over the parts); else
 * NDA_READS_WHOLE (a user's template of the same name is read whole). */
static int reads_of_template(const char *template_path)
{
    char got[PATH_MAX];
    const char *base;
    if (!bundled_in(template_path, NDGEN_REL_TEMPLATES, got, &base))
        return NDA_READS_WHOLE;
    for (int k = 1; k < NDA_READS_COUNT; ++k)
        if (reads_row_is_template(k) && strcmp(base, reads_source[k]) == 0)
            return k;
    return NDA_READS_WHOLE;
}

/* Whether the op's template is a bundled one that splits a Partial output's sum by the chunk rule
 * (NDA_CHUNKED_TEMPLATES), found installed beside this ndgen. */
static bool chunked_template(const char *template_path)
{
    static const char *const chunked[] = {
#define NDG_CHUNKED(name) name,
        NDA_CHUNKED_TEMPLATES(NDG_CHUNKED)
#undef NDG_CHUNKED
    };
    char got[PATH_MAX];
    const char *base;
    if (!bundled_in(template_path, NDGEN_REL_TEMPLATES, got, &base))
        return false;
    for (size_t i = 0; i < sizeof chunked / sizeof *chunked; ++i)
        if (strcmp(base, chunked[i]) == 0)
            return true;
    return false;
}

/* reference = "elementwise" (derived from the op's EXPR), or { source = "file.c", name = "fn" }: a C
 * function over contiguous arrays (nda_ref_fn in nd_accessor.h) defined in that file. */
static int convert_reference(ctx *c, int t, const ndg_spec_env *env, ndg_op *op)
{
    lua_State *L = c->L;
    int ty = field(L, t, "reference"); /* +1 */
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        op->reads = reads_of_template(op->template_path);
        return 0;
    }
    if (ty == LUA_TSTRING) {
        bool ok = strcmp(lua_tostring(L, -1), "elementwise") == 0;
        int rc = ok ? 0 : FAIL(c, "reference '%s': expected \"elementwise\" (derived from EXPR) or { source = "
                                  "\"file.c\", name = \"function\" }", lua_tostring(L, -1));
        lua_pop(L, 1);
        if (rc)
            return -1;
        bool has_expr = false;
        for (int i = 0; i < op->nparams; ++i)
            has_expr |= strcmp(op->params[i].name, "EXPR") == 0;
        if (!has_expr)
            return FAIL(c, "reference \"elementwise\": the op has no EXPR parameter to derive it from");
        int outputs = 0;
        for (int i = 0; i < op->noperands; ++i)
            outputs += op->operands[i].output;
        if (outputs != 1 || op->noperands > 4)
            return FAIL(c, "reference \"elementwise\": needs one output and at most 3 inputs, not %d and %d", outputs,
                        op->noperands - outputs);
        op->reference = ndg_strdup("elementwise");
        op->reads = NDA_READS_POINTWISE; /* out[e] = EXPR(inputs at e), by construction */
        return 0;
    }
    if (ty != LUA_TTABLE) {
        int rc = FAIL(c, "field 'reference' must be \"elementwise\" or a table { source = \"file.c\", name = "
                         "\"function\" }, not a %s", type_name(L, -1));
        lua_pop(L, 1);
        return rc;
    }
    static const char *const keys[] = {"source", "name", NULL};
    char *src = NULL;
    int rc = check_keys(c, -1, keys, "reference") || get_string(c, -1, "source", true, &src) ||
             get_string(c, -1, "name", true, &op->reference);
    lua_pop(L, 1);
    if (!rc)
        rc = check_name(c, "reference: ", op->reference) || resolve_source(c, src, env, &op->reference_source);
    free(src);
    op->reads = rc || !bundled_reference(op->reference_source) ? NDA_READS_WHOLE : reads_of(op->reference);
    return rc ? -1 : 0;
}

static int convert_op(ctx *c, int t, const ndg_spec_env *env, ndg_op *op)
{
    static const char *const keys[] = {"name",     "template", "inputs",    "outputs",    "params", "targets",
                                       "scalars",  "requires", "reference", "moves_data", NULL};
    char *tmpl = NULL;
    int rc = check_keys(c, t, keys, "op") || get_string(c, t, "name", true, &op->name);
    if (rc)
        return -1;
    snprintf(c->where, sizeof c->where, "op '%.80s': ", op->name);
    if (check_name(c, "", op->name))
        return -1;
    rc = get_string(c, t, "template", true, &tmpl) || resolve_template(c, tmpl, env, op) ||
         convert_operands(c, t, "inputs", false, op) || convert_operands(c, t, "outputs", true, op) ||
         check_output_indices(c, op) || convert_params(c, t, op) || get_string(c, t, "scalars", false, &op->scalars) ||
         check_scalars(c, op) || get_bool(c, t, "moves_data", &op->moves_data);
    free(tmpl);
    op->parts_chunked = !rc && chunked_template(op->template_path);
    for (int i = 0; i < op->noperands && !rc; ++i) {
        char what[128];
        snprintf(what, sizeof what, "operand '%.64s': ", op->operands[i].name);
        rc = check_name(c, what, op->operands[i].name);
        static const char *const reserved[] = {"all", "fixed", "scalars"}; /* a target's other keys */
        for (int k = 0; k < 3 && !rc; ++k)
            if (strcmp(op->operands[i].name, reserved[k]) == 0)
                rc = FAIL(c, "operand '%s': the name is reserved for a target's '%s' key", reserved[k], reserved[k]);
        for (int j = 0; j < i && !rc; ++j)
            if (strcmp(op->operands[i].name, op->operands[j].name) == 0)
                rc = FAIL(c, "operand '%s': the name is used twice", op->operands[i].name);
    }
    return rc || convert_requires(c, t, op) || convert_reference(c, t, env, op) || convert_targets(c, t, op) ||
                   check_targets(c, op) ? -1 : 0;
}

/* ---------------------------------------------------------------- driver */

static char *spec_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".lua") == 0)
        n -= 4;
    return ndg_strndup(base, n);
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? ndg_strndup(path, (size_t)(slash - path)) : ndg_strdup(".");
}

/* The error on top of the stack, after a failed protected call with status rc. */
static int chunk_error(lua_State *L, int rc, const char *path, nd_error *err)
{
    const char *msg = lua_tostring(L, -1);
    if (rc == LUA_ERRMEM && sandbox_of(L)->late)
        return nd_fail(err, "%s: the spec ran for more than %g seconds of wall-clock time (--spec-seconds sets the "
                            "limit)", path, sandbox_of(L)->seconds);
    if (rc == LUA_ERRMEM)
        return nd_fail(err, "%s: the spec used more than %zu MB of memory (--spec-memory sets the cap)", path,
                       sandbox_of(L)->limit >> 20);
    /* a missing file reads "cannot open <path>"; give it the file:line form too */
    if (msg && (strncmp(msg, "cannot open", 11) == 0 || strncmp(msg, "cannot read", 11) == 0))
        return nd_fail(err, "%s:1: %s", path, msg);
    return nd_fail(err, "%s", msg && has_position(msg) ? msg : "?:0: error without a message");
}

static int run_chunk(lua_State *L, const char *path, nd_error *err)
{
    lua_pushfstring(L, "@%s", path);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_MAIN);
    lua_pushcfunction(L, locate_error);
    int rc = load_sandboxed(L, path);
    if (rc == LUA_OK)
        rc = lua_pcall(L, 0, 0, -2);
    if (rc != LUA_OK)
        return chunk_error(L, rc, path, err);
    lua_pop(L, 1);
    return 0;
}

/* Ops in name order: a spec may declare them from pairs(), whose order changes from run to run, and
 * the output must not. */
static int dtype_order(const ndg_op *x, const ndg_op *y)
{
    for (int i = 0; i < x->noperands && i < y->noperands; ++i)
        if (x->operands[i].dtype != y->operands[i].dtype)
            return (int)x->operands[i].dtype - (int)y->operands[i].dtype;
    return x->noperands - y->noperands;
}

static int op_order(const void *a, const void *b)
{
    const ndg_op *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : dtype_order(x, y);
}

static int collect(lua_State *L, const ndg_spec_env *env, ndg_spec *out, nd_error *err)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REG_DEPS);
    out->ndeps = (int)lua_rawlen(L, -1);
    out->deps = ndg_calloc((size_t)out->ndeps + 1, sizeof *out->deps);
    for (int i = 0; i < out->ndeps; ++i) {
        lua_rawgeti(L, -1, i + 1);
        out->deps[i] = ndg_strdup(lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_OPS);
    int n = (int)lua_rawlen(L, -1);
    if (n == 0)
        return nd_fail(err, "%s:1: the spec declares no op; call op{name = ..., template = ..., ...}", out->path);
    out->ops = ndg_calloc((size_t)n, sizeof *out->ops); /* n <= MAX_OPS (lua_op) */
    for (int i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -1, 2);
        ctx c = {L, out->path, (int)lua_tointeger(L, -1), "", err};
        lua_pop(L, 1);
        lua_rawgeti(L, -1, 1);
        ndg_op *op = &out->ops[out->nops++];
        op->line = c.line;
        if (convert_op(&c, -1, env, op))
            return -1;
        lua_pop(L, 2);
        for (int j = 0; j + 1 < out->nops; ++j) /* one op per name and dtypes: the runtime picks by both */
            if (strcmp(out->ops[j].name, op->name) == 0 && dtype_order(&out->ops[j], op) == 0)
                return nd_fail(err, "%s:%d: op '%s' with these dtypes is declared twice (first at line %d)",
                               out->path, op->line, op->name, out->ops[j].line);
    }
    qsort(out->ops, (size_t)out->nops, sizeof *out->ops, op_order);
    return 0;
}

typedef struct collect_args {
    const ndg_spec_env *env;
    ndg_spec *out;
    nd_error *err;
    int rc;
} collect_args;

/* collect() as a protected call: a metamethod run while reading the spec's tables (a __tostring in a
 * message) is the spec's code too, and its errors must not escape. */
static int collect_protected(lua_State *L)
{
    collect_args *a = lua_touserdata(L, 1);
    lua_pop(L, 1);
    a->rc = collect(L, a->env, a->out, a->err);
    return 0;
}

int ndg_spec_load(const char *path, const ndg_spec_env *env, ndg_spec *out, nd_error *err)
{
    char dir[PATH_MAX];
    double seconds = env->seconds > 0 ? env->seconds : NDG_SPEC_SECONDS_DEFAULT;
    sandbox sb = {0, env->memory_limit ? env->memory_limit : NDG_SPEC_MEMORY_DEFAULT, false, 0,
                  monotonic_now() + seconds, seconds, false};
    memset(out, 0, sizeof *out);
    out->path = ndg_strdup(path);
    out->name = spec_name(path);
    if (strlen(out->name) == 0 || strlen(out->name) > NDG_MAX_NAME) {
        nd_fail(err, "%s:1: the spec's file name gives a %zu-character kernel group name; it must have 1 to %d", path,
                strlen(out->name), NDG_MAX_NAME);
        ndg_spec_free(out);
        return -1;
    }
    char *given = env->spec_dir ? ndg_strdup(env->spec_dir) : dir_of(path);
    bool found = realpath(given, dir) != NULL;
    free(given);
    lua_State *L = found ? lua_newstate(limited_alloc, &sb) : NULL;
    if (!L) {
        ndg_spec_free(out);
        return nd_fail(err, found ? "%s:1: cannot create a Lua state" : "%s:1: cannot open its spec folder", path);
    }
    build_sandbox(L, dir);
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_PERIOD);
    int rc = run_chunk(L, path, err);
    if (!rc) {
        collect_args a = {env, out, err, 0};
        lua_pushcfunction(L, locate_error);
        lua_pushcfunction(L, collect_protected);
        lua_pushlightuserdata(L, &a);
        int st = lua_pcall(L, 1, 0, -3);
        rc = st != LUA_OK ? chunk_error(L, st, path, err) : a.rc;
    }
    /* Finalizers run in lua_close: with the budget spent, they cannot run a single instruction. */
    sb.spent = true;
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, 1);
    lua_close(L);
    if (rc)
        ndg_spec_free(out);
    return rc;
}

static void free_op(ndg_op *op)
{
    free(op->name);
    free(op->scalars);
    free(op->requires);
    free(op->reference);
    free(op->reference_source);
    free(op->template_path);
    for (int k = 0; k < op->noperands; ++k) {
        free(op->operands[k].name);
        free(op->operands[k].index);
    }
    for (int k = 0; k < op->nparams; ++k) {
        free(op->params[k].name);
        free(op->params[k].value);
    }
    free(op->targets);
}

void ndg_spec_free(ndg_spec *s)
{
    for (int i = 0; i < s->nops; ++i)
        free_op(&s->ops[i]);
    free(s->ops);
    for (int i = 0; i < s->ndeps; ++i)
        free(s->deps[i]);
    free(s->deps);
    free(s->path);
    free(s->name);
    memset(s, 0, sizeof *s);
}

static bool op_has_dtypes(const ndg_op *op, const char *dtypes)
{
    char have[256] = "";
    for (int k = 0; k < op->noperands; ++k) {
        strcat(have, k ? "," : "");
        strcat(have, nd_dtype_name(op->operands[k].dtype));
    }
    return !dtypes || strcmp(have, dtypes) == 0;
}

/* One target from one signature per operand; each must carry the operand's dtype. */
static int target_of(const ndg_op *op, char *const *sigs, int nsigs, ndg_target *t, nd_error *err)
{
    int gx, gy;
    if (nsigs != op->noperands)
        return nd_fail(err, "--target: op '%s' has %d operands, but %d signatures were given", op->name,
                       op->noperands, nsigs);
    memset(t, 0, sizeof *t);
    t->line = op->line;
    for (int k = 0; k < nsigs; ++k) {
        nd_error why;
        if (nd_dist_from_signature(sigs[k], &t->dist[k], &gx, &gy, &why))
            return nd_fail(err, "--target '%s': not a distribution signature: %s", sigs[k], why.msg);
        if (t->dist[k].spec.dtype != op->operands[k].dtype)
            return nd_fail(err, "--target %s: operand '%s' of op '%s' is %s", sigs[k], op->operands[k].name,
                           op->name, nd_dtype_name(op->operands[k].dtype));
    }
    return 0;
}

int ndg_spec_select(ndg_spec *s, const char *op, const char *dtypes, char *const *sigs, int nsigs, nda_fixed fixed,
                    nd_error *err)
{
    int keep = -1;
    for (int i = 0; i < s->nops && keep < 0; ++i)
        if (strcmp(s->ops[i].name, op) == 0 && op_has_dtypes(&s->ops[i], dtypes))
            keep = i;
    if (keep < 0)
        return nd_fail(err, "%s: no op '%s'%s%s", s->path, op, dtypes ? " with dtypes " : "", dtypes ? dtypes : "");
    ndg_target t;
    if (nsigs > 0 && target_of(&s->ops[keep], sigs, nsigs, &t, err))
        return -1;
    if (nsigs > 0) {
        t.fixed = fixed;
        ndg_target *one = ndg_malloc(sizeof *one);
        *one = t;
        free(s->ops[keep].targets);
        s->ops[keep].targets = one;
        s->ops[keep].ntargets = 1;
    }
    for (int i = 0; i < s->nops; ++i)
        if (i != keep)
            free_op(&s->ops[i]);
    s->ops[0] = s->ops[keep];
    s->nops = 1;
    return 0;
}
