/* `gpuext cdi` — a CDI spec that puts gpuext into containers.
 *
 *   gpuext cdi [--prefix DIR] [--root DIR] [--output FILE] [--env K=V]...
 *
 * CDI (container-device-interface, read by containerd >= 1.7, CRI-O and
 * podman from /etc/cdi or /var/run/cdi) describes a "device" as edits to a
 * container: here one device, gpuext.dev/shim=default, whose edits bind-mount
 * the install PREFIX read-only at the same path and set LD_LIBRARY_PATH and
 * TRITON_LIBCUDA_PATH to PREFIX/lib (plus any --env). NVIDIA's own CDI
 * device (nvidia.com/gpu=...) still brings the driver; the shim finds it by
 * path. The edits sit in the device (CDI refuses a device without edits).
 * Written as JSON (CDI takes JSON or YAML), to stdout or atomically to FILE,
 * mode 0644. --root: the node's root as this process sees it (a DaemonSet
 * mounts it at /host): PREFIX is checked there and written as given, the
 * path the node and its containers know. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"
#include "common/gx_util.h"

/* The lowest version with everything the spec uses (device containerEdits
 * with env and mounts): parsers older than a newer version refuse it. */
#define CDI_VERSION "0.3.0"
#define CDI_KIND    "gpuext.dev/shim"
#define CDI_MAX_ENV 64

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuext cdi [--prefix DIR] [--root DIR] [--output FILE] [--env K=V]...\n\n"
		   "Write a CDI spec (kind " CDI_KIND ", device 'default') that bind-mounts the gpuext\n"
		   "install (PREFIX, default this gpuext's) read-only into containers and sets\n"
		   "LD_LIBRARY_PATH and TRITON_LIBCUDA_PATH to PREFIX/lib; --env adds variables\n"
		   "(GPUEXT_TOOL=..., GPUEXT_POLICY=...); --root R: PREFIX is a path on a node whose\n"
		   "root is mounted at R (an installer container). Default output: stdout. Then:\n"
		   "  gpuext cdi --output /etc/cdi/gpuext.json\n"
		   "  podman run --device nvidia.com/gpu=all --device " CDI_KIND "=default IMAGE\n");
}

/* An environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_ok(const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || (kv[0] >= '0' && kv[0] <= '9'))
		return false;
	for (const char *p = kv; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

static void json_strs(FILE *f, const char *const *v, int n, const char *indent)
{
	fprintf(f, "[");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\n%s", i ? "," : "", indent);
		gx_json_str(f, v[i]);
	}
	fprintf(f, "\n%.*s]", (int)strlen(indent) - 2, indent);
}

int do_cdi(int argc, char **argv)
{
	const char *prefix_arg = NULL, *output = NULL, *root = NULL;
	const char *extra[CDI_MAX_ENV];
	int nextra = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--prefix") && i + 1 < argc) {
			prefix_arg = argv[++i];
		} else if (!strcmp(a, "--root") && i + 1 < argc) {
			root = argv[++i];
		} else if ((!strcmp(a, "--output") || !strcmp(a, "-o")) && i + 1 < argc) {
			output = argv[++i];
		} else if (!strcmp(a, "--env") && i + 1 < argc) {
			const char *kv = argv[++i];
			if (!env_name_ok(kv)) {
				p_err("--env '%s': expected NAME=VALUE", kv);
				return 2;
			}
			if (nextra >= CDI_MAX_ENV) {
				p_err("--env: at most %d", CDI_MAX_ENV);
				return 2;
			}
			extra[nextra++] = kv;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
			usage(stdout);
			return 0;
		} else {
			p_err("unknown argument '%s' (usage: gpuext cdi [--prefix DIR] [--root DIR] [--output FILE] [--env K=V]...)",
			      a);
			return 2;
		}
	}

	char prefix[PATH_MAX];
	if (root && (!prefix_arg || prefix_arg[0] != '/')) {
		p_err("--root needs an absolute --prefix (the path on the node)");
		return 2;
	}
	if (root) {
		size_t n = strlen(prefix_arg);
		while (n > 1 && prefix_arg[n - 1] == '/')
			n--;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)n, prefix_arg);
	} else if (prefix_arg) {
		if (!realpath(prefix_arg, prefix)) {
			p_err("--prefix %s: %s", prefix_arg, strerror(errno));
			return 2;
		}
	} else if (gx_cli_prefix(prefix, sizeof(prefix))) {
		p_err("cannot find this gpuext's PREFIX (/proc/self/exe): %s; pass --prefix", strerror(errno));
		return 2;
	}
	/* ':' would split LD_LIBRARY_PATH; a newline has no place in a path to mount. */
	if (strpbrk(prefix, ":\n")) {
		p_err("PREFIX %s contains ':' or a newline: LD_LIBRARY_PATH cannot name it", prefix);
		return 2;
	}
	char lib[PATH_MAX + 8], shim[2 * PATH_MAX + 32];
	snprintf(lib, sizeof(lib), "%s/lib", prefix);
	snprintf(shim, sizeof(shim), "%s%s/libcuda.so.1", root ? root : "", lib);
	if (access(shim, R_OK)) {
		p_err("%s: %s: not a gpuext install (pass --prefix)", shim, strerror(errno));
		return 2;
	}

	/* The environment: ours, then --env (a name given again replaces ours). */
	char llp[PATH_MAX + 32], tlp[PATH_MAX + 32];
	snprintf(llp, sizeof(llp), "LD_LIBRARY_PATH=%s", lib);
	snprintf(tlp, sizeof(tlp), "TRITON_LIBCUDA_PATH=%s", lib);
	const char *env[CDI_MAX_ENV + 2] = { llp, tlp };
	int nenv = 2;
	for (int i = 0; i < nextra; i++) {
		size_t kl = strchr(extra[i], '=') - extra[i] + 1;
		int j = 0;
		while (j < nenv && strncmp(env[j], extra[i], kl))
			j++;
		env[j] = extra[i];
		if (j == nenv)
			nenv++;
	}

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		p_err("out of memory");
		return 1;
	}
	static const char *const opts[] = { "ro", "nosuid", "nodev", "bind" };
	fprintf(f, "{\n  \"cdiVersion\": \"" CDI_VERSION "\",\n  \"kind\": \"" CDI_KIND "\",\n"
		   "  \"devices\": [\n    {\n      \"name\": \"default\",\n      \"containerEdits\": {\n"
		   "        \"env\": ");
	json_strs(f, env, nenv, "          ");
	fprintf(f, ",\n        \"mounts\": [\n          {\n            \"hostPath\": ");
	gx_json_str(f, prefix);
	fprintf(f, ",\n            \"containerPath\": ");
	gx_json_str(f, prefix);
	fprintf(f, ",\n            \"options\": ");
	json_strs(f, opts, GX_ARRAY_SIZE(opts), "              ");
	fprintf(f, "\n          }\n        ]\n      }\n    }\n  ]\n}\n");
	if (fclose(f) || !text) {
		free(text);
		p_err("out of memory");
		return 1;
	}
	int rc = 0;
	if (!output || !strcmp(output, "-")) {
		fwrite(text, 1, len, stdout);
	} else {
		int ret = gx_write_file_mode(output, text, len, 0644);
		if (ret) {
			p_err("cannot write %s: %s", output, strerror(-ret));
			rc = 1;
		}
	}
	free(text);
	return rc;
}
