/* A stand-in for a program linked with a netCDF-C of any version, to test the plugin's version
 * check without installing old netCDF-C releases. It exports the two functions the plugin looks
 * up at run time, nc_inq_libvers (answering the version in $FAKE_NC_VERSION) and
 * nc_def_user_format (recording its calls), and is run with the plugin under LD_PRELOAD:
 *
 *   gcc -rdynamic -o fakehost scripts/plugin-fakehost.c -ldl
 *   FAKE_NC_VERSION="4.8.1 of Jun  2 2021 $" LD_PRELOAD=libnc3pack_netcdf.so ./fakehost
 *
 * It prints one line per nc_def_user_format call the plugin's constructor made ("def MODE
 * MAGIC-IN-HEX"), then what the plugin's nc3pack_netcdf_register() returns ("register N"). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char calls[8][64];
static int ncalls;

const char *nc_inq_libvers(void) {
    const char *v = getenv("FAKE_NC_VERSION");
    return v ? v : "4.9.0 of Jan  1 2023 $";
}

int nc_def_user_format(int mode, void *table, char *magic) {
    (void)table;
    if (ncalls < 8) {
        int n = snprintf(calls[ncalls], sizeof calls[ncalls], "def %d ", mode);
        for (size_t i = 0; magic && magic[i] && n < 60; i++)
            n += snprintf(calls[ncalls] + n, sizeof calls[ncalls] - n, "%02x",
                          (unsigned char)magic[i]);
        ncalls++;
    }
    return 0;
}

int main(void) {
    int (*reg)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nc3pack_netcdf_register");
    for (int i = 0; i < ncalls; i++)
        printf("%s\n", calls[i]);
    if (!reg) {
        printf("no plugin\n");
        return 1;
    }
    printf("register %d\n", reg());
    return 0;
}
