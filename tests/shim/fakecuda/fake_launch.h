/* fake_launch.h — what the fake driver (fake.c) records of the last launch,
 * as its fake_last_launch() returns it to the tests that dlsym it. */
#ifndef FAKE_LAUNCH_H
#define FAKE_LAUNCH_H

struct fake_launch {
	const char *api;
	void *func;
	unsigned grid[3], block[3], shmem;
	void *stream;
	void **params;
	long count;
};

#endif
