/* run_internal.h — shared by `gpuext run` and the `gpuext-run` program. */
#ifndef CLI_RUN_INTERNAL_H
#define CLI_RUN_INTERNAL_H

/* argv[0] is the command name; `name` is what usage lines call it. Returns
 * an exit status when it does not exec. */
int gx_run_main(int argc, char **argv, const char *name);

/* run_tool.c: run cmd with GPUEXT_TOOL=tool in a fresh shm folder, wait,
 * then print `gpuext tools report`. Returns the command's exit status. */
int gx_run_tool(const char *tool, char **cmd, int json, const char *trace);

#endif
