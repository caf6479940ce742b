/* SPDX-License-Identifier: Apache-2.0 */
/* The CEL language through the internal API: Kubernetes libraries, strings, regex, errors. */
#include <string.h>

#include "cel/cel-internal.h"
#include "tap.h"

static void fmt(const struct cel_value *v, char *buf, size_t len);

static void fmt_append(char *buf, size_t len, const char *s)
{
    size_t o = strlen(buf);
    if (o < len)
        snprintf(buf + o, len - o, "%s", s);
}

static void fmt(const struct cel_value *v, char *buf, size_t len)
{
    char tmp[256];
    buf[0] = '\0';
    switch (v->kind) {
    case CEL_K_NULL:
        snprintf(buf, len, "null");
        break;
    case CEL_K_BOOL:
        snprintf(buf, len, "%s", v->b ? "true" : "false");
        break;
    case CEL_K_INT:
        snprintf(buf, len, "%lld", (long long)v->i);
        break;
    case CEL_K_UINT:
        snprintf(buf, len, "%lluu", (unsigned long long)v->u);
        break;
    case CEL_K_DOUBLE:
        cel_format_double(v->d, tmp, sizeof(tmp));
        snprintf(buf, len, "%sd", tmp);
        break;
    case CEL_K_STRING:
        snprintf(buf, len, "'%.*s'", (int)v->len, v->s);
        break;
    case CEL_K_BYTES:
        snprintf(buf, len, "b'%.*s'", (int)v->len, v->s);
        break;
    case CEL_K_TYPE:
        snprintf(buf, len, "type(%s)", cel_kind_name(v->type_kind));
        break;
    case CEL_K_QUANTITY:
        gs_quantity_format(&v->q, tmp, sizeof(tmp));
        snprintf(buf, len, "quantity(%s)", tmp);
        break;
    case CEL_K_SEMVER:
        snprintf(buf, len, "semver(%llu.%llu.%llu%s%.*s)", (unsigned long long)v->semver->major,
                 (unsigned long long)v->semver->minor, (unsigned long long)v->semver->patch,
                 v->semver->pre_len ? "-" : "", (int)v->semver->pre_len, v->semver->pre);
        break;
    case CEL_K_LIST:
        snprintf(buf, len, "[");
        for (size_t i = 0; i < v->list->n; i++) {
            fmt(&v->list->items[i], tmp, sizeof(tmp));
            if (i)
                fmt_append(buf, len, ", ");
            fmt_append(buf, len, tmp);
        }
        fmt_append(buf, len, "]");
        break;
    case CEL_K_MAP:
        snprintf(buf, len, "map(%zu)", v->map->n);
        break;
    case CEL_K_ERROR:
        snprintf(buf, len, "error: %s", v->err.msg);
        break;
    default:
        snprintf(buf, len, "?");
        break;
    }
}

/* Compile (checked, no variables) and evaluate; result or "compile: msg" / "error: msg". */
static void run(const char *expr, char *out, size_t len)
{
    struct gs_error err = {0};
    struct cel_program *p = cel_compile_env(expr, strlen(expr), NULL, 0, true, &err);
    if (!p) {
        snprintf(out, len, "compile: %s", err.msg);
        return;
    }
    struct cel_arena arena;
    cel_arena_init(&arena, NULL, 0);
    struct cel_value v;
    if (cel_eval_program(p, NULL, &arena, CEL_COST_LIMIT, &v, &err) < 0) {
        snprintf(out, len, "abort: %s", err.msg);
    } else if (v.kind == CEL_K_ERROR) {
        cel_error_report(p, &v, &err);
        snprintf(out, len, "error: %s", err.msg);
    } else {
        fmt(&v, out, len);
    }
    cel_arena_fini(&arena);
    cel_program_free(p);
}

static const struct {
    const char *expr, *want; /* want: exact result, or a prefix ending in '*' */
} rows[] = {
    /* Kubernetes quantity library */
    {"quantity('1.5Gi')", "quantity(1536Mi)"},
    {"quantity('1Gi').add(quantity('512Mi'))", "quantity(1536Mi)"},
    {"quantity('1Gi').sub(quantity('2Gi')).sign()", "-1"},
    {"quantity('1').add(2)", "quantity(3)"},
    {"quantity('500m').isInteger()", "false"},
    {"quantity('2k').asInteger()", "2000"},
    {"quantity('500m').asInteger()", "error: cannot convert value to integer*"},
    {"quantity('1.5').asApproximateFloat()", "1.5d"},
    {"quantity('100m').isLessThan(quantity('1'))", "true"},
    {"quantity('1Ki').compareTo(quantity('1024'))", "0"},
    {"quantity('1Gi') == quantity('1024Mi')", "true"},
    {"isQuantity('15Gi')", "true"},
    {"isQuantity('15 Gi')", "false"},
    {"quantity('x')", "error: invalid quantity: 'x' (<input>:1:1)"},
    {"string(quantity('2048Mi'))", "'2Gi'"},
    /* semver library */
    {"semver('1.2.3').major() + semver('1.2.3').minor() + semver('1.2.3').patch()", "6"},
    {"semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", "true"},
    {"semver('1.0.0-alpha.2').isLessThan(semver('1.0.0-alpha.10'))", "true"},
    {"semver('1.0.0-alpha.beta').compareTo(semver('1.0.0-alpha.1'))", "1"},
    {"semver('1.0.0+build.5') == semver('1.0.0')", "true"},
    {"semver('2.10.0').isGreaterThan(semver('2.9.9'))", "true"},
    {"isSemver('1.2')", "false"},
    {"isSemver('01.2.3')", "false"},
    {"isSemver('v1.2', true)", "true"},
    {"semver('v1.02', true)", "semver(1.2.0)"},
    {"semver('1.2')", "error: invalid semver: '1.2'*"},
    /* strings and regex */
    {"'Tesla T4'.matches('^Tesla [TV][0-9]+$')", "true"},
    {"'abc'.matches('b')", "true"},
    {"matches('abc', '^b')", "false"},
    {"'héllo'.matches('^h.llo$')", "true"},
    {"'x'.matches('(' + '')", "error: invalid regular expression*"},
    {"'x'.matches('(')", "compile: ERROR: <input>:1:13: invalid regular expression*"},
    {"'a,b,,c'.split(',')", "['a', 'b', '', 'c']"},
    {"'a,b,c'.split(',', 2)", "['a', 'b,c']"},
    {"'a,b,c'.split(',', 0)", "[]"},
    {"'héj'.split('')", "['h', 'é', 'j']"},
    {"['a', 'b', 'c'].join('-')", "'a-b-c'"},
    {"['a', 'b'].join()", "'ab'"},
    {"'aaa'.replace('a', 'bb')", "'bbbbbb'"},
    {"'aaa'.replace('a', 'b', 2)", "'bba'"},
    {"'ab'.replace('', '-')", "'-a-b-'"},
    {"'  \\t hi \\n'.trim()", "'hi'"},
    {"'hello mellow'.indexOf('ello')", "1"},
    {"'hello mellow'.indexOf('ello', 2)", "7"},
    {"'hello mellow'.lastIndexOf('ello')", "7"},
    {"'hello mellow'.lastIndexOf('ello', 6)", "1"},
    {"'héllo'.indexOf('l')", "2"},
    {"'hello'.indexOf('l', 9)", "error: index out of range: 9*"},
    {"'héllo'.substring(1, 3)", "'él'"},
    {"'hello'.substring(3)", "'lo'"},
    {"'hello'.substring(3, 2)", "error: invalid substring range*"},
    {"'héllo'.charAt(1)", "'é'"},
    {"'hello'.charAt(5)", "''"},
    {"'MiXeD'.lowerAscii() + 'MiXeD'.upperAscii()", "'mixedMIXED'"},
    {"'hello'.contains('ell') && 'hello'.startsWith('he') && 'hello'.endsWith('lo')", "true"},
    {"size('héllo')", "5"},
    {"size(b'h\\xc3\\xa9')", "3"},
    /* Kubernetes lists/regex libraries, sets extension */
    {"[1, 2, 2, 5].isSorted() && !['b', 'a'].isSorted()", "true"},
    {"[1, 2, 3].sum() + [].sum()", "6"},
    {"[1.5, 2.0].sum()", "3.5d"},
    {"[9223372036854775807, 1].sum()", "error: integer overflow*"},
    {"[3, 1, 2].min() + [3, 1, 2].max()", "4"},
    {"[].max()", "error: max called on empty list*"},
    {"[1, 2, 1].indexOf(1) + [1, 2, 1].lastIndexOf(1) + [1].indexOf(7)", "1"},
    {"'abc 123 def 456'.find('[0-9]+')", "'123'"},
    {"'abc'.find('[0-9]+')", "''"},
    {"'abc 123 def 456'.findAll('[0-9]+')", "['123', '456']"},
    {"'a1b2c3'.findAll('[0-9]', 2)", "['1', '2']"},
    {"sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])", "true"},
    {"sets.equivalent([1, 2, 2], [2, 1]) && sets.intersects([1, 2], [5, 2])", "true"},
    {"sets.intersects([1], ['a'])", "compile: *found no matching overload for 'sets.intersects' "
                                    "applied to '(list(int), list(string))'"},
    {"'héllo'.reverse()", "'olléh'"},
    {"strings.quote('a\"b\\n')", "'\"a\\\"b\\n\"'"},
    {"'%s has %d GPUs, %.1f%% free, mask %x'.format(['node1', 8, 12.345, 255])",
     "'node1 has 8 GPUs, 12.3% free, mask ff'"},
    {"'%s'.format([{'b': [1, 'x'], 'a': null}])", "'{a: null, b: [1, x]}'"},
    {"'%d'.format(['x'])", "error: error during formatting: decimal clause*"},
    {"'%s %s'.format([1])", "error: index 1 out of range*"},
    /* Kubernetes IP / CIDR libraries */
    {"ip('10.0.0.1').family() + ip('fd00::1').family()", "10"},
    {"isIP('10.0.0.01') || isIP('::ffff:1.2.3.4') || isIP('fe80::1%eth0')", "false"},
    {"ip('fe80::1').isLinkLocalUnicast() && ip('ff02::1').isLinkLocalMulticast()", "true"},
    {"ip('8.8.8.8').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()", "true"},
    {"ip('127.0.0.2').isLoopback() && ip('::').isUnspecified()", "true"},
    {"ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", "true"},
    {"cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
     "true"},
    {"cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && "
     "!cidr('10.0.0.0/16').containsCIDR('10.0.0.0/8')",
     "true"},
    {"string(cidr('10.1.2.3/8').masked()) + ' ' + string(cidr('10.1.2.3/8').ip())",
     "'10.0.0.0/8 10.1.2.3'"},
    {"cidr('fd00::/8').prefixLength()", "8"},
    {"isCIDR('10.0.0.0/33') || isCIDR('10.0.0.0/08')", "false"},
    {"ip('x')", "error: IP Address 'x' parse error during conversion from string (<input>:1:1)"},
    {"type(ip('1.2.3.4'))", "type(net.IP)"},
    /* timestamps and durations */
    {"timestamp('2009-02-13T23:31:30Z') + duration('1h') > timestamp('2009-02-14T00:00:00Z')",
     "true"},
    {"string(timestamp('2009-02-13T23:31:30.5+01:00'))", "'2009-02-13T22:31:30.5Z'"},
    {"timestamp('2009-02-13T23:31:30Z') - timestamp('2009-02-13T23:31:00Z') == duration('30s')",
     "true"},
    {"string(duration('-1.5h')) + ' ' + string(duration('1m0.25s'))", "'-5400s 60.25s'"},
    {"duration('1h30m').getMinutes()", "90"},
    {"timestamp('2009-02-13T23:31:30Z').getDayOfWeek()", "5"},
    {"timestamp('2009-02-13T23:31:30Z').getHours('+05:30')", "5"},
    {"timestamp('2024-03-01T00:00:00Z').getDayOfYear()", "60"},
    {"timestamp('2009-02-13T23:31:30Z').getHours('America/New_York')",
     "error: unsupported time zone 'America/New_York'*"},
    {"timestamp('9999-12-31T23:59:59Z') + duration('1s')", "error: timestamp out of range*"},
    {"timestamp('2009-02-30T00:00:00Z')", "error: invalid timestamp '2009-02-30T00:00:00Z'*"},
    {"duration('1x')", "error: invalid duration '1x'*"},
    {"int(timestamp('1970-01-02T00:00:00Z')) + timestamp(-1).getFullYear()", "88369"},
    /* optional types */
    {"{'a': {'b': 2}}.?a.b.value() + {'a': 1}.?z.orValue(40)", "42"},
    {"{'a': {'b': 2}}.?x.b.hasValue()", "false"},
    {"[1, 2][?5].orValue(0) + [1, 2][?1].value()", "2"},
    {"[?optional.none(), ?optional.of(3), 4]", "[3, 4]"},
    {"{'k': 1, ?'j': optional.none(), ?'z': optional.of(2)}.size()", "2"},
    {"optional.ofNonZeroValue('').hasValue() || optional.ofNonZeroValue(1).hasValue()", "true"},
    {"optional.none().value()", "error: optional.none() dereference (<input>:1:17)"},
    {"optional.none().or(optional.of(2)).value()", "2"},
    {"[?1]", "compile: ERROR: <input>:1:2: optional entry requires an optional value, got int"},
    {"type(optional.none()) == type(optional.of(1))", "true"},
    /* arithmetic and errors, with columns */
    {"9223372036854775807 + 1", "error: integer overflow (<input>:1:21)"},
    {"-9223372036854775808 - 1", "error: integer overflow*"},
    {"0u - 1u", "error: integer overflow*"},
    {"5 % 0", "error: modulus by zero*"},
    {"1 + 1u", "compile: ERROR: <input>:1:3: found no matching overload for '_+_' applied to "
               "'(int, uint)'"},
    {"dyn(1) + 1u", "error: no matching overload for '_+_' applied to '(int, uint)' (<input>:1:8)"},
    {"{'a': 1}['b']", "error: no such key: b (<input>:1:9)"},
    {"[1, 2][2]", "error: index out of bounds: 2*"},
    {"1 == 1.0 ? 'x' : 'y'", "compile: *"},
    {"dyn(1) == 1.0", "true"},
    {"dyn(1u) in [1, 2]", "true"},
    {"{1: 'a', 2u: 'b', true: 'c', 's': 'd'}[2]", "'b'"},
    {"{1: 'a', 1u: 'b'}", "error: Failed with repeated key*"},
    {"(1 / 0 > 2) || true", "true"},
    {"true && (1 / 0 > 2)", "error: divide by zero*"},
    {"[1, 2, 3].exists_one(x, x > 2)", "true"},
    {"[1, 2, 3].map(x, x > 1, x * 10)", "[20, 30]"},
    {"{'a': 1, 'b': 2}.filter(k, k != 'a')", "['b']"},
    {"[1, 0].all(x, 1 / x > 0)", "error: divide by zero*"},
    {"[0, 1].exists(x, 1 / x > 0)", "true"},
    {"cel.bind(x, 3, cel.bind(y, x * 2, [x, y]))", "[3, 6]"},
    {"[10, 20].all(i, v, v == (i + 1) * 10)", "true"},
    {"{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", "true"},
    {"[5, 7, 8].existsOne(i, v, v % 5 == i)", "true"},
    {"[1, 2, 3].transformList(i, v, i != 1, v * 10 + i)", "[10, 32]"},
    {"{'a': 1}.transformMap(k, v, k + string(v))['a']", "'a1'"},
    {"{'a': 1, 'b': 2}.transformMapEntry(k, v, {v: k})[2]", "'b'"},
    {"[1, 1].transformMapEntry(i, v, {v: i})", "error: insert failed: key already exists*"},
    {"[1].all(x, x, true)", "compile: *must have different names: x"},
    {"type(1) == int && type('a') == string && type([]) == list", "true"},
    {"type(quantity('1'))", "type(kubernetes.Quantity)"},
    {"int('12') + int(2.9) + int(-2.9)", "12"},
    {"string(1.5e21) + ' ' + string(0.0001) + ' ' + string(100.0)", "'1.5e+21 0.0001 100'"},
    /* parse errors name the column */
    {"1 +", "compile: ERROR: <input>:1:4: Syntax error: unexpected end of input"},
    {"(1 + 2", "compile: ERROR: <input>:1:7: Syntax error: expected ')', found end of input"},
    {"a.if", "compile: *"},
    {"if", "compile: ERROR: <input>:1:1: Syntax error: reserved identifier: if"},
    {"'abc", "compile: ERROR: <input>:1:1: Syntax error: unterminated string literal"},
    {"1 @ 2", "compile: ERROR: <input>:1:3: Syntax error: unexpected character"},
    {"18446744073709551616u", "compile: *out of range"},
    {"9223372036854775808", "compile: *out of range"},
    {"x.all(1, true)", "compile: *simple identifier"},
    {"has(x)", "compile: *invalid argument to has() macro"},
    {"foo(1)", "compile: ERROR: <input>:1:1: undeclared reference to 'foo'*"},
    {"'a'.size(1)", "compile: *found no matching overload for 'size' with 2 arguments"},
    {"'line1\\n' + \n x", "compile: ERROR: <input>:2:2: undeclared reference to 'x'*"},
};

static bool matches_want(const char *got, const char *want)
{
    size_t n = strlen(want);
    if (n && want[n - 1] == '*') {
        const char *star = strchr(want, '*');
        /* "prefix*" or "prefix*suffix" */
        size_t pre = (size_t)(star - want);
        if (strncmp(got, want, pre))
            return false;
        const char *suffix = star + 1;
        if (!*suffix)
            return true;
        return strstr(got + pre, suffix) != NULL;
    }
    const char *star = strchr(want, '*');
    if (star) {
        size_t pre = (size_t)(star - want);
        return !strncmp(got, want, pre) && strstr(got + pre, star + 1);
    }
    return !strcmp(got, want);
}

static void test_cost_accounting(void)
{
    /* the cost of one evaluation grows with the work done */
    struct gs_error err;
    const char *e = "[1,2,3,4,5,6,7,8,9,10].map(x, x * 2).size() == 10";
    struct cel_program *p = cel_compile_env(e, strlen(e), NULL, 0, true, &err);
    struct cel_arena arena;
    cel_arena_init(&arena, NULL, 0);
    struct cel_value v;
    is_int(cel_eval_program(p, NULL, &arena, 20, &v, &err), -E2BIG, "tiny cost limit aborts");
    ok(strstr(err.msg, "cost limit exceeded") != NULL, "message says cost limit: %s", err.msg);
    cel_arena_fini(&arena);
    cel_arena_init(&arena, NULL, 0);
    is_int(cel_eval_program(p, NULL, &arena, 1000, &v, &err), 0, "enough cost evaluates");
    ok(v.kind == CEL_K_BOOL && v.b, "result true");
    cel_arena_fini(&arena);
    cel_program_free(p);
}

static void test_dynamic_regex_cost(void)
{
    char list[512] = "[";
    for (int i = 0; i < 100; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? "," : "", i);
    strcat(list, "]");
    char expr[1400], got[512];
    /* one run-time pattern, used 10,000 times: compiled once per evaluation */
    snprintf(expr, sizeof(expr), "%s.all(x, %s.all(y, 'ab'.matches('a' + 'b')))", list, list);
    run(expr, got, sizeof(got));
    is_str(got, "true", "a repeated run-time pattern is compiled once");
    /* 10,000 distinct run-time patterns: each compile is charged, the cost limit stops it */
    snprintf(expr, sizeof(expr),
             "%s.all(x, %s.all(y, 'a'.matches(string(x) + '|' + string(y) + '|a')))", list, list);
    run(expr, got, sizeof(got));
    ok(strstr(got, "abort: operation cancelled: actual cost limit exceeded") == got,
       "compiling many distinct patterns hits the cost limit: %s", got);
}

static void test_variables(void)
{
    struct cel_arena types;
    cel_arena_init(&types, NULL, 0);
    const struct cel_type *t = cel_type_parse(&types, "map(string,list(int))");
    ok(t && t->kind == CEL_T_MAP && t->p2->kind == CEL_T_LIST, "type spec parses");
    ok(cel_type_parse(&types, "map(string") == NULL, "bad type spec rejected");
    struct cel_decl d[] = {{"m", t}, {"a.b.c", cel_type_parse(&types, "int")}};
    struct gs_error err;
    const char *e = "m['k'].size() + a.b.c";
    struct cel_program *p = cel_compile_env(e, strlen(e), d, 2, true, &err);
    ok(p != NULL, "compile with declared variables");
    struct cel_value items[2] = {cel_int(1), cel_int(2)};
    struct cel_list l = {2, items};
    struct cel_value k = cel_str("k", 1), lv = {.kind = CEL_K_LIST, .list = &l};
    struct cel_map m = {.impl = CEL_MAP_GENERIC, .n = 1, .keys = &k, .vals = &lv};
    struct cel_value vars[2] = {{.kind = CEL_K_MAP, .map = &m}, cel_int(40)};
    struct cel_arena arena;
    cel_arena_init(&arena, NULL, 0);
    struct cel_value v;
    is_int(cel_eval_program(p, vars, &arena, CEL_COST_LIMIT, &v, &err), 0, "evaluates");
    ok(v.kind == CEL_K_INT && v.i == 42, "m['k'].size() + a.b.c == 42");
    cel_arena_fini(&arena);
    cel_program_free(p);
    e = "m['k'] + 1";
    p = cel_compile_env(e, strlen(e), d, 2, true, &err);
    ok(!p && strstr(err.msg, "'(list(int), int)'"), "checker knows variable types: %s", err.msg);
    /* containers: "y" in container "com.example" is com.example.y; ".y" is the root y */
    const struct cel_type *ti = cel_type_parse(&types, "int");
    struct cel_decl cd[] = {{"com.example.y", ti}, {"y", ti}};
    struct cel_value cv[2] = {cel_int(1), cel_int(2)};
    const char *names[] = {"y", ".y", "[5].exists(y, y == 5)"};
    const int64_t want[] = {1, 2, 1};
    for (int q = 0; q < 3; q++) {
        p = cel_compile_ex(names[q], strlen(names[q]), cd, 2, true, "com.example", &err);
        cel_arena_init(&arena, NULL, 0);
        int rc = p ? cel_eval_program(p, cv, &arena, CEL_COST_LIMIT, &v, &err) : -1;
        int64_t got = v.kind == CEL_K_BOOL ? v.b : v.kind == CEL_K_INT ? v.i : -1;
        ok(rc == 0 && got == want[q], "container com.example: %s -> %lld", names[q],
           (long long)want[q]);
        cel_arena_fini(&arena);
        cel_program_free(p);
    }
    cel_arena_fini(&types);
}

static void test_quantity_fast_path(void)
{
    /* the fast path for plain integers must give exactly what gs_quantity_parse gives */
    static const char *const inputs[] = {
        "0",
        "1",
        "100",
        "15Gi",
        "141Gi",
        "1Ki",
        "1024Mi",
        "4k",
        "5M",
        "7G",
        "3T",
        "2P",
        "1E",
        "8Ei",
        "7Ei",
        "0Gi",
        "000123",
        "10",
        "1000000",
        "9223372036854775807",
        "9223372036854775808",
        "1.5Gi",
        "-1",
        "+1",
        "1e3",
        "500m",
        "1Gi ",
        "",
        "Gi",
        "16Ei",
    };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        struct gs_quantity a = {0}, b = {0};
        struct gs_error ea, eb;
        int ra = cel_quantity_parse(inputs[i], strlen(inputs[i]), &a, &ea);
        int rb = gs_quantity_parse(inputs[i], &b, &eb);
        ok(ra == rb && (ra < 0 || (a.mant == b.mant && a.exp10 == b.exp10 && a.format == b.format)),
           "quantity '%s' parses identically (rc %d/%d)", inputs[i], ra, rb);
    }
    /* folded at compile time: a literal quantity becomes a constant */
    struct gs_error err;
    const char *e = "quantity('10Gi')";
    struct cel_program *p = cel_compile_env(e, strlen(e), NULL, 0, true, &err);
    ok(p && p->root->kind == CEL_N_LITERAL && p->root->lit.kind == CEL_K_QUANTITY,
       "quantity('10Gi') is folded into a constant");
    cel_program_free(p);
    e = "quantity('bad')";
    p = cel_compile_env(e, strlen(e), NULL, 0, true, &err);
    ok(p && p->root->kind == CEL_N_CALL, "an invalid literal stays a call (run-time error)");
    cel_program_free(p);
}

int main(void)
{
    tap_plan_auto();
    char got[512];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        run(rows[i].expr, got, sizeof(got));
        char name[256];
        snprintf(name, sizeof(name), "%s", rows[i].expr);
        for (char *c = name; *c; c++)
            if (*c == '\n')
                *c = ' ';
        if (!ok(matches_want(got, rows[i].want), "%s => %s", name, rows[i].want))
            diag("  got: %s", got);
    }
    test_cost_accounting();
    test_variables();
    test_quantity_fast_path();
    test_dynamic_regex_cost();
    return tap_done();
}
