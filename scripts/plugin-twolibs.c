/* Two netCDF-C libraries in one process (as netCDF4-python's own copy beside the system's):
 * each numbers its files from 65536, so the plugin must tell their files apart.
 *
 * Usage: plugin-twolibs LIB_A LIB_B PLUGIN FILE_A FILE_B
 *
 * Loads two copies of libnetcdf (LIB_A, LIB_B: two paths, each dlopened RTLD_LOCAL), then the
 * plugin (its constructor registers with both; nc3pack_netcdf_register must say 2), opens
 * FILE_A through A and FILE_B through B, prints what each library answers for its file, closes
 * B's file and asks A again. Run on two originals and on their archives: the outputs must be
 * the same. Exits 1 when a library or symbol cannot be loaded or an open fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*open_fn)(const char *, int, int *);
typedef int (*inq_fn)(int, int *, int *, int *, int *);
typedef int (*close_fn)(int);
typedef int (*inq_dim_fn)(int, int, char *, size_t *);
typedef int (*get_var_double_fn)(int, int, double *);
typedef int (*inq_varndims_fn)(int, int, int *);
typedef int (*inq_vartype_fn)(int, int, int *);

struct lib {
    const char *tag;
    void *h;
    open_fn open;
    inq_fn inq;
    close_fn close;
    inq_dim_fn inq_dim;
};

static void *sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "plugin-twolibs: %s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static void load(struct lib *l, const char *tag, const char *path) {
    l->tag = tag;
    l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->h) {
        fprintf(stderr, "plugin-twolibs: %s\n", dlerror());
        exit(1);
    }
    l->open = (open_fn)sym(l->h, "nc_open");
    l->inq = (inq_fn)sym(l->h, "nc_inq");
    l->close = (close_fn)sym(l->h, "nc_close");
    l->inq_dim = (inq_dim_fn)sym(l->h, "nc_inq_dim");
}

static void show(struct lib *l, int ncid) {
    int nd = -1, nv = -1, na = -1, ul = -2;
    int r = l->inq(ncid, &nd, &nv, &na, &ul);
    printf("%s: inq rc %d: %d dims, %d vars, %d atts, unlimited %d\n", l->tag, r, nd, nv, na, ul);
    for (int d = 0; d < nd && r == 0; d++) {
        char name[257];
        size_t len = 0;
        int rd = l->inq_dim(ncid, d, name, &len);
        printf("%s:   dim %d rc %d: %s = %zu\n", l->tag, d, rd, rd ? "?" : name, len);
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: plugin-twolibs LIB_A LIB_B PLUGIN FILE_A FILE_B\n");
        return 2;
    }
    struct lib a, b;
    load(&a, "A", argv[1]);
    load(&b, "B", argv[2]);
    if (a.open == b.open) {
        fprintf(stderr, "plugin-twolibs: %s and %s are one library\n", argv[1], argv[2]);
        return 1;
    }
    void *plugin = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        fprintf(stderr, "plugin-twolibs: %s\n", dlerror());
        return 1;
    }
    int (*reg)(void) = (int (*)(void))sym(plugin, "nc3pack_netcdf_register");
    /* The constructor registered already; registering again keeps each library's table. */
    fprintf(stderr, "registered with %d libraries\n", reg());
    int na, nb;
    int ra = a.open(argv[4], 0, &na);
    int rb = b.open(argv[5], 0, &nb);
    printf("open rc %d %d, same ncid %d\n", ra, rb, na == nb);
    if (ra || rb)
        return 1;
    show(&a, na);
    show(&b, nb);
    printf("B close rc %d\n", b.close(nb));
    show(&a, na);
    printf("B closed ncid: ");
    show(&b, nb);
    printf("A close rc %d\n", a.close(na));
    return 0;
}
