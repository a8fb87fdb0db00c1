# ptxas_regs.awk — "KERNEL REGISTERS" per kernel from `ptxas -v` output
# (its "Compiling entry function 'K'" and "Used N registers" lines), for
# the tests that compare register counts (tests/image/test_cubin_regs.sh,
# tests/gpu/regs.sh).
/Compiling entry function/ {
	k = $7
	gsub(/\x27/, "", k)
}
/Used [0-9]+ registers/ {
	for (i = 1; i <= NF; i++)
		if ($i == "Used")
			print k, $(i + 1)
}
