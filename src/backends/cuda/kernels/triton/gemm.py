# tileforge's Triton GEMM: C = alpha * op(A) @ op(B) + beta * C, one program per BLOCK_M x BLOCK_N tile of C in
# groups of GROUP_M tile rows. Every planned value is a tl.constexpr or a launch option (num_warps, num_stages);
# only pointers, sizes, leading dimensions and the scalars travel at run time. The triton family's code generation
# (src/backends/cuda/triton) sets the constexprs for one Config and problem, and compile.py compiles it ahead.
import triton
import triton.language as tl


@triton.jit
def tileforge_gemm(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c, alpha, beta,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   A_ROW: tl.constexpr, B_ROW: tl.constexpr, EVEN_K: tl.constexpr, HINT_M: tl.constexpr,
                   HINT_N: tl.constexpr, ALPHA_ONE: tl.constexpr, HAS_BETA: tl.constexpr):
    # Grouped raster: GROUP_M tile rows walk their tile columns together, so a wave shares B's panels in L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    # One matrix of a batch per grid row.
    batch = tl.program_id(1).to(tl.int64)
    a_ptr += batch * stride_a
    b_ptr += batch * stride_b
    c_ptr += batch * stride_c

    # Rows and columns past the edge wrap to valid ones, so the loads need no mask there; the store drops them.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    # Where a dimension is a multiple of its block no wrap happens inside a block, so its offsets are contiguous and
    # aligned: the hints let a column-major A or a row-major B load 16 bytes at a time.
    if HINT_M:
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_M), BLOCK_M)
    if HINT_N:
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_N), BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if A_ROW:
        a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
        a_step = BLOCK_K
    else:
        a_ptrs = a_ptr + offs_am[:, None] + offs_k[None, :] * lda
        a_step = BLOCK_K * lda
    if B_ROW:
        b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
        b_step = BLOCK_K * ldb
    else:
        b_ptrs = b_ptr + offs_k[:, None] + offs_bn[None, :] * ldb
        b_step = BLOCK_K

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            # The last step's columns of A and rows of B past K read as zeros.
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += a_step
        b_ptrs += b_step

    if not ALPHA_ONE:
        acc = acc * alpha
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * ldc + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    if HAS_BETA:
        acc += beta * tl.load(c_ptrs, mask=c_mask, other=0.0).to(tl.float32)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
