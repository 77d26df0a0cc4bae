/* The netCDF-C plugin's conversion matrix and API answers, as text to compare.
 *
 * Usage: plugin-convert FILE [IN-MEMORY-NAME]
 *
 * Prints, for FILE opened with nc_open (with IN-MEMORY-NAME: FILE's bytes opened with
 * nc_open_mem under that name, which may name another file on disk): its format, dimensions, and for every variable its
 * inquiry answers (type, shape, fill value, storage, endianness, filters, ... with their return
 * codes), then the variable read as every memory type (nc_get_vara_TYPE, nc_get_vars_TYPE with
 * stride 2, one nc_get_varm with a reversed map) and every attribute read as every memory type,
 * each with its return code and the bytes it left in a buffer that was filled with 0xA5 first
 * (netCDF-C leaves some out-of-range values unwritten). Also the error answers of bad reads.
 * Run it on an original file and on its archive (under the plugin): the outputs must be equal.
 * Nothing printed names the file.
 *
 * Build: gcc -O1 -o plugin-convert scripts/plugin-convert.c -lnetcdf
 */
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_mem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4096 /* values read per variable at most */

static const char *TNAME[] = {"nat", "byte", "char", "short", "int", "float", "double",
                              "ubyte", "ushort", "uint", "int64", "uint64"};
static const size_t TSIZE[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};

static void hex(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
    printf("\n");
}

static int get_vara(int nc, int v, int t, const size_t *st, const size_t *ct, void *b) {
    switch (t) {
    case NC_BYTE: return nc_get_vara_schar(nc, v, st, ct, b);
    case NC_CHAR: return nc_get_vara_text(nc, v, st, ct, b);
    case NC_SHORT: return nc_get_vara_short(nc, v, st, ct, b);
    case NC_INT: return nc_get_vara_int(nc, v, st, ct, b);
    case NC_FLOAT: return nc_get_vara_float(nc, v, st, ct, b);
    case NC_DOUBLE: return nc_get_vara_double(nc, v, st, ct, b);
    case NC_UBYTE: return nc_get_vara_ubyte(nc, v, st, ct, b);
    case NC_USHORT: return nc_get_vara_ushort(nc, v, st, ct, b);
    case NC_UINT: return nc_get_vara_uint(nc, v, st, ct, b);
    case NC_INT64: return nc_get_vara_longlong(nc, v, st, ct, b);
    default: return nc_get_vara_ulonglong(nc, v, st, ct, b);
    }
}

static int get_vars(int nc, int v, int t, const size_t *st, const size_t *ct,
                    const ptrdiff_t *sd, void *b) {
    switch (t) {
    case NC_BYTE: return nc_get_vars_schar(nc, v, st, ct, sd, b);
    case NC_CHAR: return nc_get_vars_text(nc, v, st, ct, sd, b);
    case NC_SHORT: return nc_get_vars_short(nc, v, st, ct, sd, b);
    case NC_INT: return nc_get_vars_int(nc, v, st, ct, sd, b);
    case NC_FLOAT: return nc_get_vars_float(nc, v, st, ct, sd, b);
    case NC_DOUBLE: return nc_get_vars_double(nc, v, st, ct, sd, b);
    case NC_UBYTE: return nc_get_vars_ubyte(nc, v, st, ct, sd, b);
    case NC_USHORT: return nc_get_vars_ushort(nc, v, st, ct, sd, b);
    case NC_UINT: return nc_get_vars_uint(nc, v, st, ct, sd, b);
    case NC_INT64: return nc_get_vars_longlong(nc, v, st, ct, sd, b);
    default: return nc_get_vars_ulonglong(nc, v, st, ct, sd, b);
    }
}

static int get_varm(int nc, int v, int t, const size_t *st, const size_t *ct,
                    const ptrdiff_t *sd, const ptrdiff_t *map, void *b) {
    switch (t) {
    case NC_BYTE: return nc_get_varm_schar(nc, v, st, ct, sd, map, b);
    case NC_CHAR: return nc_get_varm_text(nc, v, st, ct, sd, map, b);
    case NC_SHORT: return nc_get_varm_short(nc, v, st, ct, sd, map, b);
    case NC_INT: return nc_get_varm_int(nc, v, st, ct, sd, map, b);
    case NC_FLOAT: return nc_get_varm_float(nc, v, st, ct, sd, map, b);
    case NC_DOUBLE: return nc_get_varm_double(nc, v, st, ct, sd, map, b);
    case NC_UBYTE: return nc_get_varm_ubyte(nc, v, st, ct, sd, map, b);
    case NC_USHORT: return nc_get_varm_ushort(nc, v, st, ct, sd, map, b);
    case NC_UINT: return nc_get_varm_uint(nc, v, st, ct, sd, map, b);
    case NC_INT64: return nc_get_varm_longlong(nc, v, st, ct, sd, map, b);
    default: return nc_get_varm_ulonglong(nc, v, st, ct, sd, map, b);
    }
}

static int get_att(int nc, int v, const char *name, int t, void *b) {
    switch (t) {
    case NC_BYTE: return nc_get_att_schar(nc, v, name, b);
    case NC_CHAR: return nc_get_att_text(nc, v, name, b);
    case NC_SHORT: return nc_get_att_short(nc, v, name, b);
    case NC_INT: return nc_get_att_int(nc, v, name, b);
    case NC_FLOAT: return nc_get_att_float(nc, v, name, b);
    case NC_DOUBLE: return nc_get_att_double(nc, v, name, b);
    case NC_UBYTE: return nc_get_att_ubyte(nc, v, name, b);
    case NC_USHORT: return nc_get_att_ushort(nc, v, name, b);
    case NC_UINT: return nc_get_att_uint(nc, v, name, b);
    case NC_INT64: return nc_get_att_longlong(nc, v, name, b);
    default: return nc_get_att_ulonglong(nc, v, name, b);
    }
}

static unsigned char buf[MAXN * 8 + 64];

static void atts(int nc, int v, int natts) {
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1];
        nc_type at;
        size_t len;
        int r = nc_inq_attname(nc, v, a, name);
        r |= nc_inq_att(nc, v, name, &at, &len);
        printf("  att %s type %d len %zu rc %d\n", name, at, len, r);
        if (len > MAXN) len = MAXN;
        for (int t = 1; t <= 11; t++) {
            memset(buf, 0xa5, sizeof buf);
            r = get_att(nc, v, name, t, buf);
            printf("   as %s rc %d: ", TNAME[t], r);
            hex(buf, len * TSIZE[t]);
        }
        /* NC_STRING is no memory type of a classic file (text: NC_ECHAR first). */
        char *sv[MAXN];
        r = nc_get_att_string(nc, v, name, sv);
        printf("   as string rc %d\n", r);
        if (r == NC_NOERR) nc_free_string(len, sv);
    }
}

/* With a second argument NAME, every open is nc_open_mem(NAME, ...) of FILE's bytes: NAME may
 * be another file on disk, which must not be what is read. */
static char *mem_name;
static char *mem;
static size_t mem_size;

static int open_it(const char *path, int *ncid) {
    if (!mem_name)
        return nc_open(path, NC_NOWRITE, ncid);
    return nc_open_mem(mem_name, NC_NOWRITE, mem_size, mem, ncid);
}

int main(int argc, char **argv) {
    int nc, r, fmt, ndims, nvars, ngatts, unlim;
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: plugin-convert FILE [IN-MEMORY-NAME]\n");
        return 2;
    }
    if (argc == 3) {
        FILE *f = fopen(argv[1], "rb");
        if (!f || fseek(f, 0, SEEK_END) || (long)(mem_size = (size_t)ftell(f)) < 0 ||
            fseek(f, 0, SEEK_SET)) {
            perror(argv[1]);
            return 2;
        }
        mem = malloc(mem_size ? mem_size : 1);
        if (!mem || fread(mem, 1, mem_size, f) != mem_size) {
            perror(argv[1]);
            return 2;
        }
        fclose(f);
        mem_name = argv[2];
    }
    if ((r = open_it(argv[1], &nc))) {
        printf("open rc %d\n", r);
        fprintf(stderr, "NetCDF: %s\n", nc_strerror(r));
        return 1;
    }
    r = nc_inq_format(nc, &fmt);
    printf("format %d rc %d\n", fmt, r);
    /* The mode reported back: the open's flags and the kind's; NC_INMEMORY exactly when
     * opened by nc_open_mem (printed as whether that holds, the same in both runs). */
    int fx = -1, mx = -1, nc4;
    r = nc_inq_format_extended(nc, &fx, &mx);
    printf("format extended %d mode 0x%x in-memory as opened %d rc %d\n", fx, mx & ~NC_INMEMORY,
           !(mx & NC_INMEMORY) == !mem_name, r);
    if ((r = nc_open(argv[1], NC_SHARE, &nc4)) == NC_NOERR) {
        r = nc_inq_format_extended(nc4, &fx, &mx);
        printf("opened shared: mode 0x%x rc %d, close rc %d\n", mx, r, nc_close(nc4));
    } else {
        printf("opened shared: rc %d\n", r);
    }
    r = nc_inq(nc, &ndims, &nvars, &ngatts, &unlim);
    printf("inq %d %d %d %d rc %d\n", ndims, nvars, ngatts, unlim, r);
    for (int d = 0; d < ndims; d++) {
        char name[NC_MAX_NAME + 1];
        size_t len;
        r = nc_inq_dim(nc, d, name, &len);
        printf("dim %d %s %zu rc %d\n", d, name, len, r);
    }
    printf("bad dim rc %d, bad var rc %d, bad att rc %d\n", nc_inq_dimlen(nc, ndims, NULL),
           nc_inq_varndims(nc, nvars, &r), nc_inq_att(nc, NC_GLOBAL, "no such", NULL, NULL));
    printf("def_dim rc %d, put_att rc %d, redef rc %d\n", nc_def_dim(nc, "x", 1, &r),
           nc_put_att_text(nc, NC_GLOBAL, "x", 1, "x"), nc_redef(nc));
    printf("def_var rc %d, enddef rc %d, set_fill rc %d, del_att rc %d, rename_dim rc %d\n",
           nc_def_var(nc, "x", NC_INT, 0, NULL, &r), nc_enddef(nc), nc_set_fill(nc, NC_NOFILL, &r),
           nc_del_att(nc, NC_GLOBAL, "x"), nc_rename_dim(nc, 0, "y"));
    if (nvars > 0) {
        size_t z[NC_MAX_VAR_DIMS] = {0}, one[NC_MAX_VAR_DIMS];
        double x[8] = {0};
        for (int d = 0; d < NC_MAX_VAR_DIMS; d++) one[d] = 1;
        printf("put_vara rc %d, rename_var rc %d, def_var_fill rc %d\n",
               nc_put_vara_double(nc, 0, z, one, x), nc_rename_var(nc, 0, "y"),
               nc_def_var_fill(nc, 0, 1, NULL));
    }
    if (nvars > 0) {
        /* NC_GLOBAL names no variable to read: nc_get_vara_TYPE and nc_get_var1_TYPE answer
         * NC_EGLOBAL, the others (which ask the variable's type first) NC_ENOTVAR. */
        size_t z[NC_MAX_VAR_DIMS] = {0}, one[NC_MAX_VAR_DIMS];
        ptrdiff_t sd[NC_MAX_VAR_DIMS];
        int x[8];
        for (int d = 0; d < NC_MAX_VAR_DIMS; d++) one[d] = sd[d] = 1;
        printf("global vara_int rc %d, var1_int rc %d, vara rc %d, var_int rc %d, vars_int rc %d\n",
               nc_get_vara_int(nc, NC_GLOBAL, z, one, x), nc_get_var1_int(nc, NC_GLOBAL, z, x),
               nc_get_vara(nc, NC_GLOBAL, z, one, x), nc_get_var_int(nc, NC_GLOBAL, x),
               nc_get_vars_int(nc, NC_GLOBAL, z, one, sd, x));
    }
    printf("global attributes\n");
    atts(nc, NC_GLOBAL, ngatts);
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        nc_type t;
        int nd, dimids[NC_MAX_VAR_DIMS], na;
        r = nc_inq_var(nc, v, name, &t, &nd, dimids, &na);
        printf("var %d %s type %d ndims %d natts %d rc %d\n", v, name, t, nd, na, r);
        int nofill = -1, endian = -1, shuf = -1, defl = -1, lev = -1, fl = -1, stor = -1;
        unsigned char fill[8];
        memset(fill, 0xa5, 8);
        printf(" fill rc %d nofill %d ", nc_inq_var_fill(nc, v, &nofill, fill), nofill);
        hex(fill, TSIZE[t]);
        printf(" endian rc %d %d\n", nc_inq_var_endian(nc, v, &endian), endian);
        printf(" deflate rc %d %d %d %d\n", nc_inq_var_deflate(nc, v, &shuf, &defl, &lev), shuf,
               defl, lev);
        printf(" fletcher rc %d %d\n", nc_inq_var_fletcher32(nc, v, &fl), fl);
        printf(" chunking rc %d %d\n", nc_inq_var_chunking(nc, v, &stor, NULL), stor);
        size_t nf = 99;
        printf(" filters rc %d %zu\n", nc_inq_var_filter_ids(nc, v, &nf, NULL), nf);
        atts(nc, v, na);
        {
            /* One value as NC_STRING (not a memory type of a classic file; text: NC_ECHAR). */
            size_t z1[NC_MAX_VAR_DIMS] = {0}, o1[NC_MAX_VAR_DIMS];
            ptrdiff_t s1[NC_MAX_VAR_DIMS], m1[NC_MAX_VAR_DIMS];
            char *sv[1] = {NULL};
            for (int d = 0; d < NC_MAX_VAR_DIMS; d++) o1[d] = s1[d] = m1[d] = 1;
            printf(" string rc vara %d vars %d varm %d\n", nc_get_vara_string(nc, v, z1, o1, sv),
                   nc_get_vars_string(nc, v, z1, o1, s1, sv),
                   nc_get_varm_string(nc, v, z1, o1, s1, m1, sv));
        }
        /* The selection: everything, the first dimension cut to stay within MAXN values. */
        size_t shape[NC_MAX_VAR_DIMS], st[NC_MAX_VAR_DIMS] = {0}, ct[NC_MAX_VAR_DIMS];
        ptrdiff_t sd[NC_MAX_VAR_DIMS], map[NC_MAX_VAR_DIMS];
        size_t inner = 1, n = 1;
        for (int d = 0; d < nd; d++) nc_inq_dimlen(nc, dimids[d], &shape[d]);
        for (int d = nd - 1; d >= 1; d--) inner *= shape[d];
        for (int d = 0; d < nd; d++) ct[d] = shape[d];
        if (nd > 0 && inner > 0 && shape[0] * inner > MAXN) ct[0] = MAXN / inner;
        if (nd > 0 && inner > MAXN) continue; /* too large a row for this test */
        for (int d = 0; d < nd; d++) n *= ct[d];
        for (int m = 1; m <= 11; m++) {
            memset(buf, 0xa5, sizeof buf);
            r = get_vara(nc, v, m, st, ct, buf);
            printf(" vara as %s rc %d: ", TNAME[m], r);
            hex(buf, n * TSIZE[m]);
            /* Stride 2 in every dimension. */
            size_t cs[NC_MAX_VAR_DIMS], ns = 1;
            for (int d = 0; d < nd; d++) {
                sd[d] = 2;
                cs[d] = (ct[d] + 1) / 2;
                ns *= cs[d];
            }
            memset(buf, 0xa5, sizeof buf);
            r = get_vars(nc, v, m, st, cs, sd, buf);
            printf(" vars as %s rc %d: ", TNAME[m], r);
            hex(buf, ns * TSIZE[m]);
        }
        /* A reversed map (the last dimension outermost), native type. */
        if (nd > 0) {
            ptrdiff_t k = 1;
            for (int d = 0; d < nd; d++) {
                map[d] = k;
                k *= (ptrdiff_t)ct[d];
                sd[d] = 1;
            }
            memset(buf, 0xa5, sizeof buf);
            r = nc_get_varm(nc, v, st, ct, sd, map, buf);
            printf(" varm rc %d: ", r);
            hex(buf, n * TSIZE[t]);
            /* Bad selections: past the end, a start beyond, a zero stride, a stride past it. */
            size_t big[NC_MAX_VAR_DIMS], beyond[NC_MAX_VAR_DIMS], one[NC_MAX_VAR_DIMS];
            for (int d = 0; d < nd; d++) {
                big[d] = shape[d] + 1;
                beyond[d] = shape[d] + 1;
                one[d] = 1;
            }
            printf(" edge rc %d, coords rc %d, ", get_vara(nc, v, t, st, big, buf),
                   get_vara(nc, v, t, beyond, one, buf));
            printf("at-end rc %d, ", get_vara(nc, v, t, shape, one, buf));
            sd[0] = 0;
            printf("stride0 rc %d, ", get_vars(nc, v, t, st, one, sd, buf));
            sd[0] = 3;
            size_t c2[NC_MAX_VAR_DIMS];
            for (int d = 0; d < nd; d++) c2[d] = ct[d];
            memset(buf, 0xa5, sizeof buf);
            r = get_vars(nc, v, t, st, c2, sd, buf);
            printf("stride-over rc %d: ", r);
            hex(buf, n * TSIZE[t]);
            /* A stride whose second index is the first dimension's end (NC_EINVALCOORDS, the
             * first value still read). */
            size_t c3[NC_MAX_VAR_DIMS];
            for (int d = 0; d < nd; d++) {
                c3[d] = d == 0 ? 2 : 1;
                sd[d] = d == 0 && shape[0] > 0 ? (ptrdiff_t)shape[0] : 1;
            }
            memset(buf, 0xa5, sizeof buf);
            r = get_vars(nc, v, t, st, c3, sd, buf);
            printf(" stride-to-end rc %d: ", r);
            hex(buf, 2 * TSIZE[t]);
            /* nc_get_varm past the end (stride 3 in the first dimension), with the reversed
             * map: the values inside are stored. */
            for (int d = 0; d < nd; d++) sd[d] = d == 0 ? 3 : 1;
            memset(buf, 0xa5, sizeof buf);
            r = nc_get_varm(nc, v, st, ct, sd, map, buf);
            printf(" varm-over rc %d: ", r);
            hex(buf, n * TSIZE[t]);
            /* The order of the checks: a start at (or past) the last dimension's end with a
             * count past the first's; a start past the first's end with a zero stride in the
             * last. */
            size_t s4[NC_MAX_VAR_DIMS], c4[NC_MAX_VAR_DIMS];
            for (int past = 0; past <= 1; past++) {
                for (int d = 0; d < nd; d++) {
                    s4[d] = d == nd - 1 ? shape[d] + (size_t)past : 0;
                    c4[d] = d == 0 ? shape[d] + 2 : 1;
                    sd[d] = 1;
                }
                if (nd == 1) c4[0] = 1;
                printf(" order%d rc vara %d vars %d varm %d ", past, get_vara(nc, v, t, s4, c4, buf),
                       get_vars(nc, v, t, s4, c4, sd, buf), nc_get_varm(nc, v, s4, c4, sd, NULL, buf));
                sd[0] = 2;
                printf("vars2 %d varm2 %d mapped %d\n", get_vars(nc, v, t, s4, c4, sd, buf),
                       nc_get_varm(nc, v, s4, c4, sd, NULL, buf),
                       nc_get_varm(nc, v, s4, c4, sd, map, buf));
            }
            for (int d = 0; d < nd; d++) {
                s4[d] = d == 0 ? shape[0] + 1 : 0;
                c4[d] = 1;
                sd[d] = d == nd - 1 ? 0 : 1;
            }
            printf(" stride0-coords rc vars %d varm %d mapped %d\n", get_vars(nc, v, t, s4, c4, sd, buf),
                   nc_get_varm(nc, v, s4, c4, sd, NULL, buf), nc_get_varm(nc, v, s4, c4, sd, map, buf));
            /* NC_STRING with no record (no first-dimension index) selected: a record variable
             * answers NC_NOERR before the type is looked at, another NC_EBADTYPE; strided past
             * the first dimension's end: the last value's error, NC_EINVALCOORDS. */
            char *sv[2] = {NULL, NULL};
            for (int d = 0; d < nd; d++) {
                s4[d] = 0;
                c4[d] = d == 0 ? 0 : 1;
                sd[d] = d == 0 && shape[0] > 0 ? (ptrdiff_t)shape[0] : 1;
            }
            printf(" string none rc %d", nc_get_vara_string(nc, v, s4, c4, sv));
            c4[0] = 2;
            printf(" past-end vars %d varm %d\n", nc_get_vars_string(nc, v, s4, c4, sd, sv),
                   nc_get_varm_string(nc, v, s4, c4, sd, NULL, sv));
            /* A map that sends every value to one place, stride 2 past the first dimension's
             * end, as every memory type: of the values stored, the last remains (a value out of
             * range is not stored in netCDF-C's rule without ERANGE_FILL). */
            ptrdiff_t map0[NC_MAX_VAR_DIMS] = {0};
            for (int d = 0; d < nd; d++) {
                c4[d] = d == 0 ? (shape[0] + 1) / 2 + 1 : 1;
                sd[d] = d == 0 ? 2 : 1;
            }
            if (c4[0] * 4 <= MAXN) {
                printf(" one-place");
                for (int m = 1; m <= 11; m++) {
                    memset(buf, 0xa5, sizeof buf);
                    r = get_varm(nc, v, m, s4, c4, sd, map0, buf);
                    printf(" %s rc %d ", TNAME[m], r);
                    hex(buf, 2 * TSIZE[m]);
                }
            }
        }
    }
    /* Two opens of one file at once, then one closed and the file opened again (netCDF-C
     * reuses the ncid): each answers for itself. */
    int nc2, nc3, n2 = -1, n3 = -1;
    r = open_it(argv[1], &nc2);
    printf("second open rc %d\n", r);
    printf("close rc %d\n", nc_close(nc));
    printf("closed ncid answers rc %d\n", nc_inq_nvars(nc, &n2));
    r = open_it(argv[1], &nc3);
    printf("third open rc %d, ncid reused %d\n", r, nc3 == nc);
    int r2 = nc_inq_nvars(nc2, &n2), r3 = nc_inq_nvars(nc3, &n3);
    printf("nvars rc %d %d, both: %d %d\n", r2, r3, n2 == nvars, n3 == nvars);
    printf("close rc %d %d\n", nc_close(nc2), nc_close(nc3));
    return 0;
}
