# gemms.awk: `awk -v want=N -f gemms.awk MODEL.ptx MODEL.ll` checks that each of the N matmuls
# in the host IR calls mtc_cu_gemm (or, for a batch with no strided form, mtc_cu_launch) naming
# a generated tiled matmul kernel, the fallback when cuBLAS is absent, that the PTX defines.
# Kernel N is kN_OP (backend-cuda/kern.c); the manifest in the IR lists them.
FILENAME ~ /\.ptx$/ {
	if ($1 == ".visible" && $2 == ".entry") {
		k = $3
		sub(/\(.*/, "", k)
		entry[k] = 1
	}
	next
}
{
	s = $0
	while (match(s, /kernel k[0-9]+_[a-z_0-9]+/)) {
		k = substr(s, RSTART + 7, RLENGTH - 7)
		name[substr(k, 2, index(k, "_") - 2) + 0] = k
		s = substr(s, RSTART + RLENGTH)
	}
}
/call i32 @mtc_cu_(gemm|launch)\(/ {
	split($0, a, /, i32 /)
	k = name[a[2] + 0]
	if (k !~ /_matmul$/) {
		if ($0 ~ /mtc_cu_gemm/) {
			print "gemm with kernel " a[2] " (" k "), not a matmul kernel"
			bad = 1
		}
		next
	}
	n++
	if (!(k in entry)) {
		print "kernel " k " is not in the PTX"
		bad = 1
	}
}
END {
	if (n != want) {
		print n " matmul launches in the host IR, " want " matmuls in the IR"
		bad = 1
	}
	exit bad
}
