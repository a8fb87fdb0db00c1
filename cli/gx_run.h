/* gx_run.h — shared by `gpuext run` and the `gpuext-run` program. */
#ifndef GX_RUN_H
#define GX_RUN_H

/* argv[0] is the command name; `name` is what usage lines call it. Returns
 * an exit status when it does not exec. */
int gx_run_main(int argc, char **argv, const char *name);

#endif
