//go:build !purego

#include "textflag.h"

// masks<>+32−4k holds k all-ones lanes followed by zeros (k ≤ 8).
DATA masks<>+0(SB)/4, $0xffffffff
DATA masks<>+4(SB)/4, $0xffffffff
DATA masks<>+8(SB)/4, $0xffffffff
DATA masks<>+12(SB)/4, $0xffffffff
DATA masks<>+16(SB)/4, $0xffffffff
DATA masks<>+20(SB)/4, $0xffffffff
DATA masks<>+24(SB)/4, $0xffffffff
DATA masks<>+28(SB)/4, $0xffffffff
DATA masks<>+32(SB)/4, $0
DATA masks<>+36(SB)/4, $0
DATA masks<>+40(SB)/4, $0
DATA masks<>+44(SB)/4, $0
DATA masks<>+48(SB)/4, $0
DATA masks<>+52(SB)/4, $0
DATA masks<>+56(SB)/4, $0
DATA masks<>+60(SB)/4, $0
GLOBL masks<>(SB), RODATA|NOPTR, $64

// func gatherAxpyAVX2(dst, w []float32, ld int, idx []int32, val []float32)
//
// dst[c] += Σ_j val[j]·w[idx[j]·ld + c]. Columns are processed in blocks of
// 64 (eight YMM accumulators held in registers across the whole sparse
// vector), then 8, then one at a time.
TEXT ·gatherAxpyAVX2(SB), NOSPLIT, $0-104
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ ld+48(FP), R8
	SHLQ $2, R8
	MOVQ idx_base+56(FP), R9
	MOVQ idx_len+64(FP), R10
	MOVQ val_base+80(FP), R11
	XORQ R12, R12 // byte offset of the current column block

g64:
	CMPQ CX, $64
	JLT  g8
	VMOVUPS 0(DI)(R12*1), Y0
	VMOVUPS 32(DI)(R12*1), Y1
	VMOVUPS 64(DI)(R12*1), Y2
	VMOVUPS 96(DI)(R12*1), Y3
	VMOVUPS 128(DI)(R12*1), Y4
	VMOVUPS 160(DI)(R12*1), Y5
	VMOVUPS 192(DI)(R12*1), Y6
	VMOVUPS 224(DI)(R12*1), Y7
	XORQ BX, BX

g64j:
	CMPQ BX, R10
	JGE  g64st
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VFMADD231PS 0(AX), Y8, Y0
	VFMADD231PS 32(AX), Y8, Y1
	VFMADD231PS 64(AX), Y8, Y2
	VFMADD231PS 96(AX), Y8, Y3
	VFMADD231PS 128(AX), Y8, Y4
	VFMADD231PS 160(AX), Y8, Y5
	VFMADD231PS 192(AX), Y8, Y6
	VFMADD231PS 224(AX), Y8, Y7
	INCQ BX
	JMP  g64j

g64st:
	VMOVUPS Y0, 0(DI)(R12*1)
	VMOVUPS Y1, 32(DI)(R12*1)
	VMOVUPS Y2, 64(DI)(R12*1)
	VMOVUPS Y3, 96(DI)(R12*1)
	VMOVUPS Y4, 128(DI)(R12*1)
	VMOVUPS Y5, 160(DI)(R12*1)
	VMOVUPS Y6, 192(DI)(R12*1)
	VMOVUPS Y7, 224(DI)(R12*1)
	ADDQ $256, R12
	SUBQ $64, CX
	JMP  g64

g8:
	CMPQ CX, $16
	JLE  gtail
	VMOVUPS 0(DI)(R12*1), Y0
	XORQ BX, BX

g8j:
	CMPQ BX, R10
	JGE  g8st
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VFMADD231PS 0(AX), Y8, Y0
	INCQ BX
	JMP  g8j

g8st:
	VMOVUPS Y0, 0(DI)(R12*1)
	ADDQ $32, R12
	SUBQ $8, CX
	JMP  g8

gtail:
	// 1 to 16 columns remain: two masked blocks (Y14, Y13 masks for columns
	// 0–7 and 8–15 of the tail) in one pass; the masked-off lanes are never
	// read or written.
	CMPQ CX, $0
	JLE  gdone
	LEAQ masks<>+32(SB), AX
	MOVQ CX, DX
	CMPQ DX, $8
	JLE  gm0
	MOVQ $8, DX

gm0:
	SHLQ $2, DX
	SUBQ DX, AX
	VMOVDQU 0(AX), Y14 // first min(r, 8) lanes set
	LEAQ masks<>+32(SB), AX
	MOVQ CX, DX
	SUBQ $8, DX
	JGE  gm1
	XORQ DX, DX

gm1:
	SHLQ $2, DX
	SUBQ DX, AX
	VMOVDQU 0(AX), Y13 // first max(r−8, 0) lanes set
	VMASKMOVPS 0(DI)(R12*1), Y14, Y0
	VMASKMOVPS 32(DI)(R12*1), Y13, Y1
	XORQ BX, BX

gtailj:
	CMPQ BX, R10
	JGE  gtailst
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VMASKMOVPS 0(AX), Y14, Y9
	VMASKMOVPS 32(AX), Y13, Y10
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	INCQ BX
	JMP  gtailj

gtailst:
	VMASKMOVPS Y0, Y14, 0(DI)(R12*1)
	VMASKMOVPS Y1, Y13, 32(DI)(R12*1)

gdone:
	VZEROUPPER
	RET

// func scatterAxpyAVX2(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32)
//
// w[idx[j]·ld + c] += (alpha·val[j])·x[c]. Columns are processed in blocks of
// 64 (x held in eight YMM registers), then 8, then one at a time.
TEXT ·scatterAxpyAVX2(SB), NOSPLIT, $0-112
	MOVQ w_base+0(FP), SI
	MOVQ ld+24(FP), R8
	SHLQ $2, R8
	MOVQ idx_base+32(FP), R9
	MOVQ idx_len+40(FP), R10
	MOVQ val_base+56(FP), R11
	VBROADCASTSS alpha+80(FP), Y15
	MOVQ x_base+88(FP), DI
	MOVQ x_len+96(FP), CX
	XORQ R12, R12

s64:
	CMPQ CX, $64
	JLT  s8
	VMOVUPS 0(DI)(R12*1), Y0
	VMOVUPS 32(DI)(R12*1), Y1
	VMOVUPS 64(DI)(R12*1), Y2
	VMOVUPS 96(DI)(R12*1), Y3
	VMOVUPS 128(DI)(R12*1), Y4
	VMOVUPS 160(DI)(R12*1), Y5
	VMOVUPS 192(DI)(R12*1), Y6
	VMOVUPS 224(DI)(R12*1), Y7
	XORQ BX, BX

s64j:
	CMPQ BX, R10
	JGE  s64next
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VMULPS  Y15, Y8, Y8
	VMOVUPS 0(AX), Y9
	VFMADD231PS Y0, Y8, Y9
	VMOVUPS Y9, 0(AX)
	VMOVUPS 32(AX), Y10
	VFMADD231PS Y1, Y8, Y10
	VMOVUPS Y10, 32(AX)
	VMOVUPS 64(AX), Y11
	VFMADD231PS Y2, Y8, Y11
	VMOVUPS Y11, 64(AX)
	VMOVUPS 96(AX), Y12
	VFMADD231PS Y3, Y8, Y12
	VMOVUPS Y12, 96(AX)
	VMOVUPS 128(AX), Y9
	VFMADD231PS Y4, Y8, Y9
	VMOVUPS Y9, 128(AX)
	VMOVUPS 160(AX), Y10
	VFMADD231PS Y5, Y8, Y10
	VMOVUPS Y10, 160(AX)
	VMOVUPS 192(AX), Y11
	VFMADD231PS Y6, Y8, Y11
	VMOVUPS Y11, 192(AX)
	VMOVUPS 224(AX), Y12
	VFMADD231PS Y7, Y8, Y12
	VMOVUPS Y12, 224(AX)
	INCQ BX
	JMP  s64j

s64next:
	ADDQ $256, R12
	SUBQ $64, CX
	JMP  s64

s8:
	CMPQ CX, $16
	JLT  stail
	VMOVUPS 0(DI)(R12*1), Y0
	XORQ BX, BX

s8j:
	CMPQ BX, R10
	JGE  s8next
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VMULPS  Y15, Y8, Y8
	VMOVUPS 0(AX), Y9
	VFMADD231PS Y0, Y8, Y9
	VMOVUPS Y9, 0(AX)
	INCQ BX
	JMP  s8j

s8next:
	ADDQ $32, R12
	SUBQ $8, CX
	JMP  s8

stail:
	// r = CX < 16 columns remain: split by the bits of r into a YMM (8), XMM
	// (4), 64-bit (2) and scalar (1) part, applied in one pass.
	CMPQ CX, $0
	JLE  sdone
	LEAQ (DI)(R12*1), DI
	TESTQ $8, CX
	JEQ  sp4
	VMOVUPS 0(DI), Y0

sp4:
	MOVQ CX, DX
	ANDQ $8, DX
	SHLQ $2, DX
	TESTQ $4, CX
	JEQ  sp2
	VMOVUPS 0(DI)(DX*1), X1

sp2:
	MOVQ CX, R13
	ANDQ $12, R13
	SHLQ $2, R13
	TESTQ $2, CX
	JEQ  sp1
	VMOVSD 0(DI)(R13*1), X2

sp1:
	MOVQ CX, R14
	ANDQ $14, R14
	SHLQ $2, R14
	TESTQ $1, CX
	JEQ  spj
	VMOVSS 0(DI)(R14*1), X3

spj:
	XORQ BX, BX

stailj:
	CMPQ BX, R10
	JGE  sdone
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VMULPS  Y15, Y8, Y8
	TESTQ $8, CX
	JEQ  st4
	VMOVUPS 0(AX), Y9
	VFMADD231PS Y0, Y8, Y9
	VMOVUPS Y9, 0(AX)

st4:
	TESTQ $4, CX
	JEQ  st2
	VMOVUPS 0(AX)(DX*1), X9
	VFMADD231PS X1, X8, X9
	VMOVUPS X9, 0(AX)(DX*1)

st2:
	TESTQ $2, CX
	JEQ  st1
	VMOVSD 0(AX)(R13*1), X9
	VFMADD231PS X2, X8, X9
	VMOVSD X9, 0(AX)(R13*1)

st1:
	TESTQ $1, CX
	JEQ  stn
	VMOVSS 0(AX)(R14*1), X9
	VFMADD231SS X3, X8, X9
	VMOVSS X9, 0(AX)(R14*1)

stn:
	INCQ BX
	JMP  stailj

sdone:
	VZEROUPPER
	RET

// func gatherAxpyAVX512(dst, w []float32, ld int, idx []int32, val []float32)
//
// As gatherAxpyAVX2 with ZMM registers: blocks of 128 columns (eight
// accumulators), then 16, then one masked block for the remaining columns,
// so that 10 classes take one masked FMA per non-zero.
TEXT ·gatherAxpyAVX512(SB), NOSPLIT, $0-104
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ w_base+24(FP), SI
	MOVQ ld+48(FP), R8
	SHLQ $2, R8
	MOVQ idx_base+56(FP), R9
	MOVQ idx_len+64(FP), R10
	MOVQ val_base+80(FP), R11
	XORQ R12, R12

h128:
	CMPQ CX, $128
	JLT  h16
	VMOVUPS 0(DI)(R12*1), Z0
	VMOVUPS 64(DI)(R12*1), Z1
	VMOVUPS 128(DI)(R12*1), Z2
	VMOVUPS 192(DI)(R12*1), Z3
	VMOVUPS 256(DI)(R12*1), Z4
	VMOVUPS 320(DI)(R12*1), Z5
	VMOVUPS 384(DI)(R12*1), Z6
	VMOVUPS 448(DI)(R12*1), Z7
	XORQ BX, BX

h128j:
	CMPQ BX, R10
	JGE  h128st
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Z8
	VFMADD231PS 0(AX), Z8, Z0
	VFMADD231PS 64(AX), Z8, Z1
	VFMADD231PS 128(AX), Z8, Z2
	VFMADD231PS 192(AX), Z8, Z3
	VFMADD231PS 256(AX), Z8, Z4
	VFMADD231PS 320(AX), Z8, Z5
	VFMADD231PS 384(AX), Z8, Z6
	VFMADD231PS 448(AX), Z8, Z7
	INCQ BX
	JMP  h128j

h128st:
	VMOVUPS Z0, 0(DI)(R12*1)
	VMOVUPS Z1, 64(DI)(R12*1)
	VMOVUPS Z2, 128(DI)(R12*1)
	VMOVUPS Z3, 192(DI)(R12*1)
	VMOVUPS Z4, 256(DI)(R12*1)
	VMOVUPS Z5, 320(DI)(R12*1)
	VMOVUPS Z6, 384(DI)(R12*1)
	VMOVUPS Z7, 448(DI)(R12*1)
	ADDQ $512, R12
	SUBQ $128, CX
	JMP  h128

h16:
	CMPQ CX, $16
	JLT  htail
	VMOVUPS 0(DI)(R12*1), Z0
	XORQ BX, BX

h16j:
	CMPQ BX, R10
	JGE  h16st
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Z8
	VFMADD231PS 0(AX), Z8, Z0
	INCQ BX
	JMP  h16j

h16st:
	VMOVUPS Z0, 0(DI)(R12*1)
	ADDQ $64, R12
	SUBQ $16, CX
	JMP  h16

htail:
	// Fewer than 16 columns remain: one masked block, with two accumulators
	// (even and odd non-zeros) to halve the FMA latency chain.
	CMPQ CX, $0
	JLE  hdone
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	VMOVUPS.Z 0(DI)(R12*1), K1, Z0
	VPXORD Z9, Z9, Z9
	XORQ BX, BX

htail2:
	LEAQ 1(BX), AX
	CMPQ AX, R10
	JGE  htail1
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	MOVLQSX 4(R9)(BX*4), DX
	IMULQ   R8, DX
	ADDQ    SI, DX
	ADDQ    R12, DX
	VBROADCASTSS (R11)(BX*4), Z8
	VBROADCASTSS 4(R11)(BX*4), Z10
	VFMADD231PS 0(AX), Z8, K1, Z0
	VFMADD231PS 0(DX), Z10, K1, Z9
	ADDQ $2, BX
	JMP  htail2

htail1:
	CMPQ BX, R10
	JGE  htailst
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Z8
	VFMADD231PS 0(AX), Z8, K1, Z0

htailst:
	VADDPS  Z9, Z0, Z0
	VMOVUPS Z0, K1, 0(DI)(R12*1)

hdone:
	VZEROUPPER
	RET

// func scatterAxpyAVX512(w []float32, ld int, idx []int32, val []float32, alpha float32, x []float32)
//
// As scatterAxpyAVX2 with ZMM registers: x is held in up to eight registers
// (128 columns), then blocks of 16, then one masked block.
TEXT ·scatterAxpyAVX512(SB), NOSPLIT, $0-112
	MOVQ w_base+0(FP), SI
	MOVQ ld+24(FP), R8
	SHLQ $2, R8
	MOVQ idx_base+32(FP), R9
	MOVQ idx_len+40(FP), R10
	MOVQ val_base+56(FP), R11
	VBROADCASTSS alpha+80(FP), Z15
	MOVQ x_base+88(FP), DI
	MOVQ x_len+96(FP), CX
	XORQ R12, R12

t128:
	CMPQ CX, $128
	JLT  t16
	VMOVUPS 0(DI)(R12*1), Z0
	VMOVUPS 64(DI)(R12*1), Z1
	VMOVUPS 128(DI)(R12*1), Z2
	VMOVUPS 192(DI)(R12*1), Z3
	VMOVUPS 256(DI)(R12*1), Z4
	VMOVUPS 320(DI)(R12*1), Z5
	VMOVUPS 384(DI)(R12*1), Z6
	VMOVUPS 448(DI)(R12*1), Z7
	XORQ BX, BX

t128j:
	CMPQ BX, R10
	JGE  t128next
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Z8
	VMULPS  Z15, Z8, Z8
	VMOVUPS 0(AX), Z9
	VMOVUPS 64(AX), Z10
	VMOVUPS 128(AX), Z11
	VMOVUPS 192(AX), Z12
	VFMADD231PS Z0, Z8, Z9
	VFMADD231PS Z1, Z8, Z10
	VFMADD231PS Z2, Z8, Z11
	VFMADD231PS Z3, Z8, Z12
	VMOVUPS Z9, 0(AX)
	VMOVUPS Z10, 64(AX)
	VMOVUPS Z11, 128(AX)
	VMOVUPS Z12, 192(AX)
	VMOVUPS 256(AX), Z16
	VMOVUPS 320(AX), Z17
	VMOVUPS 384(AX), Z18
	VMOVUPS 448(AX), Z19
	VFMADD231PS Z4, Z8, Z16
	VFMADD231PS Z5, Z8, Z17
	VFMADD231PS Z6, Z8, Z18
	VFMADD231PS Z7, Z8, Z19
	VMOVUPS Z16, 256(AX)
	VMOVUPS Z17, 320(AX)
	VMOVUPS Z18, 384(AX)
	VMOVUPS Z19, 448(AX)
	INCQ BX
	JMP  t128j

t128next:
	ADDQ $512, R12
	SUBQ $128, CX
	JMP  t128

t16:
	CMPQ CX, $16
	JLT  ttail
	VMOVUPS 0(DI)(R12*1), Z0
	XORQ BX, BX

t16j:
	CMPQ BX, R10
	JGE  t16next
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Z8
	VMULPS  Z15, Z8, Z8
	VMOVUPS 0(AX), Z9
	VFMADD231PS Z0, Z8, Z9
	VMOVUPS Z9, 0(AX)
	INCQ BX
	JMP  t16j

t16next:
	ADDQ $64, R12
	SUBQ $16, CX
	JMP  t16

ttail:
	// r = CX < 16 columns remain. Masked stores are slow on AMD Zen, so the
	// tail is split by the bits of r into a YMM (8), XMM (4), 64-bit (2) and
	// scalar (1) part, all applied in one pass over the non-zeros.
	CMPQ CX, $0
	JLE  tdone
	LEAQ (DI)(R12*1), DI // x of the tail
	TESTQ $8, CX
	JEQ  tp4
	VMOVUPS 0(DI), Y0

tp4:
	MOVQ CX, DX
	ANDQ $8, DX
	SHLQ $2, DX // byte offset of the 4-part
	TESTQ $4, CX
	JEQ  tp2
	VMOVUPS 0(DI)(DX*1), X1

tp2:
	MOVQ CX, R13
	ANDQ $12, R13
	SHLQ $2, R13 // byte offset of the 2-part
	TESTQ $2, CX
	JEQ  tp1
	VMOVSD 0(DI)(R13*1), X2

tp1:
	MOVQ CX, R14
	ANDQ $14, R14
	SHLQ $2, R14 // byte offset of the 1-part
	TESTQ $1, CX
	JEQ  tpj
	VMOVSS 0(DI)(R14*1), X3

tpj:
	XORQ BX, BX

ttailj:
	CMPQ BX, R10
	JGE  tdone
	MOVLQSX (R9)(BX*4), AX
	IMULQ   R8, AX
	ADDQ    SI, AX
	ADDQ    R12, AX
	VBROADCASTSS (R11)(BX*4), Y8
	VMULPS  Y15, Y8, Y8
	TESTQ $8, CX
	JEQ  tt4
	VMOVUPS 0(AX), Y9
	VFMADD231PS Y0, Y8, Y9
	VMOVUPS Y9, 0(AX)

tt4:
	TESTQ $4, CX
	JEQ  tt2
	VMOVUPS 0(AX)(DX*1), X9
	VFMADD231PS X1, X8, X9
	VMOVUPS X9, 0(AX)(DX*1)

tt2:
	TESTQ $2, CX
	JEQ  tt1
	VMOVSD 0(AX)(R13*1), X9
	VFMADD231PS X2, X8, X9
	VMOVSD X9, 0(AX)(R13*1)

tt1:
	TESTQ $1, CX
	JEQ  ttn
	VMOVSS 0(AX)(R14*1), X9
	VFMADD231SS X3, X8, X9
	VMOVSS X9, 0(AX)(R14*1)

ttn:
	INCQ BX
	JMP  ttailj

tdone:
	VZEROUPPER
	RET

// func cvt64to32AVX2(dst []float32, src []float64) bool
//
// dst[i] = float32(src[i]); reports whether every dst[i] is finite
// (accumulating dst[i]·0, which is +0 for finite values and NaN otherwise).
TEXT ·cvt64to32AVX2(SB), NOSPLIT, $0-49
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y6, Y6, Y6

c16:
	CMPQ CX, $16
	JLT  c1
	VCVTPD2PSY 0(SI), X0
	VCVTPD2PSY 32(SI), X1
	VINSERTF128 $1, X1, Y0, Y0
	VCVTPD2PSY 64(SI), X4
	VCVTPD2PSY 96(SI), X5
	VINSERTF128 $1, X5, Y4, Y4
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y4, 32(DI)
	VMULPS  Y3, Y0, Y0
	VMULPS  Y3, Y4, Y4
	VADDPS  Y0, Y2, Y2
	VADDPS  Y4, Y6, Y6
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  c16

c1:
	CMPQ CX, $0
	JLE  cdone
	VXORPS Y0, Y0, Y0
	VCVTSD2SS 0(SI), X0, X0
	VMOVSS X0, 0(DI)
	VMULSS X3, X0, X0
	VADDPS Y0, Y2, Y2
	ADDQ $8, SI
	ADDQ $4, DI
	DECQ CX
	JMP  c1

cdone:
	VADDPS Y6, Y2, Y2
	VPTEST Y2, Y2
	SETEQ ret+48(FP)
	VZEROUPPER
	RET

// func deltaAVX2(dst []float64, a, b []float32) bool
//
// dst[i] = float64(a[i]) − float64(b[i]) (b = nil: dst[i] = float64(a[i]));
// reports whether every dst[i] is finite.
TEXT ·deltaAVX2(SB), NOSPLIT, $0-73
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ a_len+32(FP), CX
	MOVQ b_base+48(FP), DX
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y6, Y6, Y6
	TESTQ DX, DX
	JEQ  w8

d8:
	CMPQ CX, $8
	JLT  d1
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y4
	VCVTPS2PD 0(DX), Y1
	VCVTPS2PD 16(DX), Y5
	VSUBPD  Y1, Y0, Y0
	VSUBPD  Y5, Y4, Y4
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y4, 32(DI)
	VMULPD  Y3, Y0, Y0
	VMULPD  Y3, Y4, Y4
	VADDPD  Y0, Y2, Y2
	VADDPD  Y4, Y6, Y6
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  d8

d1:
	CMPQ CX, $0
	JLE  ddone
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VCVTSS2SD 0(SI), X0, X0
	VCVTSS2SD 0(DX), X1, X1
	VSUBSD  X1, X0, X0
	VMOVSD  X0, 0(DI)
	VMULSD  X3, X0, X0
	VADDPD  Y0, Y2, Y2
	ADDQ $4, SI
	ADDQ $4, DX
	ADDQ $8, DI
	DECQ CX
	JMP  d1

w8:
	CMPQ CX, $8
	JLT  w1
	VCVTPS2PD 0(SI), Y0
	VCVTPS2PD 16(SI), Y4
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y4, 32(DI)
	VMULPD  Y3, Y0, Y0
	VMULPD  Y3, Y4, Y4
	VADDPD  Y0, Y2, Y2
	VADDPD  Y4, Y6, Y6
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JMP  w8

w1:
	CMPQ CX, $0
	JLE  ddone
	VXORPD Y0, Y0, Y0
	VCVTSS2SD 0(SI), X0, X0
	VMOVSD  X0, 0(DI)
	VMULSD  X3, X0, X0
	VADDPD  Y0, Y2, Y2
	ADDQ $4, SI
	ADDQ $8, DI
	DECQ CX
	JMP  w1

ddone:
	VADDPD Y6, Y2, Y2
	VPTEST Y2, Y2
	SETEQ ret+72(FP)
	VZEROUPPER
	RET

DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// func sparsifyAVX512(idx []int32, val []float32, x []float32, positive bool) int
//
// Writes the indices and values of the non-zero entries of x (with positive,
// of the entries that are not ≤ 0: positive or NaN) to the front of idx and val (both at least len(x) long) and returns their number. Each
// block of 16 is compressed in registers (VCOMPRESSPS to memory is slow on
// AMD Zen 4) and stored whole; the stores never pass index len(x) because
// the output position never passes the input position.
TEXT ·sparsifyAVX512(SB), NOSPLIT, $0-88
	MOVQ idx_base+0(FP), DI
	MOVQ val_base+24(FP), DX
	MOVQ x_base+48(FP), SI
	MOVQ x_len+56(FP), CX
	MOVBQZX positive+72(FP), R10
	VMOVDQU32 iota16<>(SB), Z1
	MOVL $16, AX
	VPBROADCASTD AX, Z2
	VPXORD Z3, Z3, Z3
	XORQ R8, R8 // number written

p16:
	CMPQ CX, $16
	JLT  ptail
	VMOVUPS 0(SI), Z0
	TESTQ   R10, R10
	JNE     p16pos
	VCMPPS  $4, Z3, Z0, K1 // x != 0 (NaN counts as non-zero)
	JMP     p16cmp

p16pos:
	VCMPPS $6, Z3, Z0, K1 // !(x <= 0)

p16cmp:
	VCOMPRESSPS.Z Z0, K1, Z4
	VPCOMPRESSD.Z Z1, K1, Z5
	VMOVUPS   Z4, 0(DX)(R8*4)
	VMOVDQU32 Z5, 0(DI)(R8*4)
	KMOVW   K1, AX
	POPCNTL AX, AX
	ADDQ    AX, R8
	VPADDD  Z2, Z1, Z1
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  p16

ptail:
	CMPQ CX, $0
	JLE  pdone
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2
	VMOVUPS.Z 0(SI), K2, Z0
	TESTQ   R10, R10
	JNE     ptpos
	VCMPPS  $4, Z3, Z0, K2, K1
	JMP     ptcmp

ptpos:
	VCMPPS $6, Z3, Z0, K2, K1

ptcmp:
	VCOMPRESSPS.Z Z0, K1, Z4
	VPCOMPRESSD.Z Z1, K1, Z5
	KMOVW   K1, AX
	POPCNTL AX, AX
	MOVQ AX, CX
	MOVQ $1, BX
	SHLQ CX, BX
	DECQ BX
	KMOVW BX, K3
	VMOVUPS   Z4, K3, 0(DX)(R8*4)
	VMOVDQU32 Z5, K3, 0(DI)(R8*4)
	ADDQ    AX, R8

pdone:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET

// func proxAVX2(w, g []float32, c float32)
//
// w[i] += c·(g[i] − w[i]) for i < len(w): the FedProx step toward g.
TEXT ·proxAVX2(SB), NOSPLIT, $0-52
	MOVQ w_base+0(FP), DI
	MOVQ w_len+8(FP), CX
	MOVQ g_base+24(FP), SI
	VBROADCASTSS c+48(FP), Y15

x32:
	CMPQ CX, $32
	JLT  x1
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  0(DI), Y0, Y0
	VSUBPS  32(DI), Y1, Y1
	VSUBPS  64(DI), Y2, Y2
	VSUBPS  96(DI), Y3, Y3
	VFMADD213PS 0(DI), Y15, Y0
	VFMADD213PS 32(DI), Y15, Y1
	VFMADD213PS 64(DI), Y15, Y2
	VFMADD213PS 96(DI), Y15, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  x32

x1:
	CMPQ CX, $0
	JLE  xdone
	VMOVSS 0(SI), X0
	VSUBSS 0(DI), X0, X0
	VFMADD213SS 0(DI), X15, X0
	VMOVSS X0, 0(DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  x1

xdone:
	VZEROUPPER
	RET

// func sparsify8AVX2(idx []int32, val []float32, x []float32, positive bool) int
//
// As sparsifyAVX512 for the first len(x) &^ 7 entries of x, with AVX2: each
// block of 8 is compressed by a permutation looked up from its comparison
// mask in compressLUT (set-bit positions in order) and stored whole. The
// caller handles the remaining entries.
TEXT ·sparsify8AVX2(SB), NOSPLIT, $0-88
	MOVQ idx_base+0(FP), DI
	MOVQ val_base+24(FP), DX
	MOVQ x_base+48(FP), SI
	MOVQ x_len+56(FP), CX
	MOVBQZX positive+72(FP), R10
	LEAQ ·compressLUT(SB), R11
	VMOVDQU iota16<>(SB), Y1
	MOVL $8, AX
	MOVQ AX, X2
	VPBROADCASTD X2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R8, R8

q8:
	CMPQ CX, $8
	JLT  qdone
	VMOVUPS 0(SI), Y0
	TESTQ   R10, R10
	JNE     q8pos
	VCMPPS  $4, Y3, Y0, Y4 // x != 0 (NaN counts as non-zero)
	JMP     q8cmp

q8pos:
	VCMPPS $6, Y3, Y0, Y4 // !(x <= 0)

q8cmp:
	VMOVMSKPS Y4, AX
	MOVQ    AX, BX
	SHLQ    $5, BX
	VMOVDQU (R11)(BX*1), Y5
	VPERMPS Y0, Y5, Y6
	VPERMD  Y1, Y5, Y7
	VMOVUPS Y6, 0(DX)(R8*4)
	VMOVDQU Y7, 0(DI)(R8*4)
	POPCNTL AX, AX
	ADDQ    AX, R8
	VPADDD  Y2, Y1, Y1
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  q8

qdone:
	MOVQ R8, ret+80(FP)
	VZEROUPPER
	RET


// perm10<> holds five permutations: lane l of vector i is (16i+l)/10, the row
// (0–7) of element 16i+l of an 8×10 block stored row-major in 80 floats.
DATA perm10<>+0(SB)/4, $0
DATA perm10<>+4(SB)/4, $0
DATA perm10<>+8(SB)/4, $0
DATA perm10<>+12(SB)/4, $0
DATA perm10<>+16(SB)/4, $0
DATA perm10<>+20(SB)/4, $0
DATA perm10<>+24(SB)/4, $0
DATA perm10<>+28(SB)/4, $0
DATA perm10<>+32(SB)/4, $0
DATA perm10<>+36(SB)/4, $0
DATA perm10<>+40(SB)/4, $1
DATA perm10<>+44(SB)/4, $1
DATA perm10<>+48(SB)/4, $1
DATA perm10<>+52(SB)/4, $1
DATA perm10<>+56(SB)/4, $1
DATA perm10<>+60(SB)/4, $1
DATA perm10<>+64(SB)/4, $1
DATA perm10<>+68(SB)/4, $1
DATA perm10<>+72(SB)/4, $1
DATA perm10<>+76(SB)/4, $1
DATA perm10<>+80(SB)/4, $2
DATA perm10<>+84(SB)/4, $2
DATA perm10<>+88(SB)/4, $2
DATA perm10<>+92(SB)/4, $2
DATA perm10<>+96(SB)/4, $2
DATA perm10<>+100(SB)/4, $2
DATA perm10<>+104(SB)/4, $2
DATA perm10<>+108(SB)/4, $2
DATA perm10<>+112(SB)/4, $2
DATA perm10<>+116(SB)/4, $2
DATA perm10<>+120(SB)/4, $3
DATA perm10<>+124(SB)/4, $3
DATA perm10<>+128(SB)/4, $3
DATA perm10<>+132(SB)/4, $3
DATA perm10<>+136(SB)/4, $3
DATA perm10<>+140(SB)/4, $3
DATA perm10<>+144(SB)/4, $3
DATA perm10<>+148(SB)/4, $3
DATA perm10<>+152(SB)/4, $3
DATA perm10<>+156(SB)/4, $3
DATA perm10<>+160(SB)/4, $4
DATA perm10<>+164(SB)/4, $4
DATA perm10<>+168(SB)/4, $4
DATA perm10<>+172(SB)/4, $4
DATA perm10<>+176(SB)/4, $4
DATA perm10<>+180(SB)/4, $4
DATA perm10<>+184(SB)/4, $4
DATA perm10<>+188(SB)/4, $4
DATA perm10<>+192(SB)/4, $4
DATA perm10<>+196(SB)/4, $4
DATA perm10<>+200(SB)/4, $5
DATA perm10<>+204(SB)/4, $5
DATA perm10<>+208(SB)/4, $5
DATA perm10<>+212(SB)/4, $5
DATA perm10<>+216(SB)/4, $5
DATA perm10<>+220(SB)/4, $5
DATA perm10<>+224(SB)/4, $5
DATA perm10<>+228(SB)/4, $5
DATA perm10<>+232(SB)/4, $5
DATA perm10<>+236(SB)/4, $5
DATA perm10<>+240(SB)/4, $6
DATA perm10<>+244(SB)/4, $6
DATA perm10<>+248(SB)/4, $6
DATA perm10<>+252(SB)/4, $6
DATA perm10<>+256(SB)/4, $6
DATA perm10<>+260(SB)/4, $6
DATA perm10<>+264(SB)/4, $6
DATA perm10<>+268(SB)/4, $6
DATA perm10<>+272(SB)/4, $6
DATA perm10<>+276(SB)/4, $6
DATA perm10<>+280(SB)/4, $7
DATA perm10<>+284(SB)/4, $7
DATA perm10<>+288(SB)/4, $7
DATA perm10<>+292(SB)/4, $7
DATA perm10<>+296(SB)/4, $7
DATA perm10<>+300(SB)/4, $7
DATA perm10<>+304(SB)/4, $7
DATA perm10<>+308(SB)/4, $7
DATA perm10<>+312(SB)/4, $7
DATA perm10<>+316(SB)/4, $7
GLOBL perm10<>(SB), RODATA|NOPTR, $320

// func dense10FwdAVX512(part, w, x []float32)
//
// For 10 classes and len(x) a multiple of 8: part[10r+c] = Σ_q x[8q+r]·w[80q+10r+c]
// (r < 8, c < 10), the partial logits of x split by row-in-block; the caller
// sums over r. Eight rows of W are 80 floats, five ZMM registers; the inputs
// of the block are spread over them with VPERMPS.
TEXT ·dense10FwdAVX512(SB), NOSPLIT, $0-72
	MOVQ part_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ x_base+48(FP), DX
	MOVQ x_len+56(FP), CX
	VMOVDQU32 perm10<>+0(SB), Z10
	VMOVDQU32 perm10<>+64(SB), Z11
	VMOVDQU32 perm10<>+128(SB), Z12
	VMOVDQU32 perm10<>+192(SB), Z13
	VMOVDQU32 perm10<>+256(SB), Z14
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19

f10:
	// Two blocks per iteration into two sets of accumulators (Z0–Z4 and
	// Z15–Z19), to halve the FMA latency chains.
	CMPQ CX, $16
	JLT  f10one
	VMOVUPS 0(DX), Y5
	VMOVUPS 32(DX), Y20
	VPERMPS Z5, Z10, Z6
	VPERMPS Z20, Z10, Z21
	VFMADD231PS 0(SI), Z6, Z0
	VFMADD231PS 320(SI), Z21, Z15
	VPERMPS Z5, Z11, Z7
	VPERMPS Z20, Z11, Z22
	VFMADD231PS 64(SI), Z7, Z1
	VFMADD231PS 384(SI), Z22, Z16
	VPERMPS Z5, Z12, Z8
	VPERMPS Z20, Z12, Z23
	VFMADD231PS 128(SI), Z8, Z2
	VFMADD231PS 448(SI), Z23, Z17
	VPERMPS Z5, Z13, Z9
	VPERMPS Z20, Z13, Z24
	VFMADD231PS 192(SI), Z9, Z3
	VFMADD231PS 512(SI), Z24, Z18
	VPERMPS Z5, Z14, Z6
	VPERMPS Z20, Z14, Z21
	VFMADD231PS 256(SI), Z6, Z4
	VFMADD231PS 576(SI), Z21, Z19
	ADDQ $64, DX
	ADDQ $640, SI
	SUBQ $16, CX
	JMP  f10

f10one:
	CMPQ CX, $8
	JLT  f10sum
	VMOVUPS 0(DX), Y5
	VPERMPS Z5, Z10, Z6
	VFMADD231PS 0(SI), Z6, Z0
	VPERMPS Z5, Z11, Z7
	VFMADD231PS 64(SI), Z7, Z1
	VPERMPS Z5, Z12, Z8
	VFMADD231PS 128(SI), Z8, Z2
	VPERMPS Z5, Z13, Z9
	VFMADD231PS 192(SI), Z9, Z3
	VPERMPS Z5, Z14, Z6
	VFMADD231PS 256(SI), Z6, Z4

f10sum:
	VADDPS Z15, Z0, Z0
	VADDPS Z16, Z1, Z1
	VADDPS Z17, Z2, Z2
	VADDPS Z18, Z3, Z3
	VADDPS Z19, Z4, Z4

f10done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VZEROUPPER
	RET

// func dense10BackAVX512(w, x []float32, rows []int, t []float32)
//
// For 10 classes: w[80q+10r+c] += Σ_b x[rows[b]+8q+r]·t[80b+10r+c] for every
// block q < len(w)/80, i.e. W += Σ_b x_b ⊗ δ_b with t holding each δ_b tiled
// eight times. Each block of W is loaded and stored once per minibatch.
TEXT ·dense10BackAVX512(SB), NOSPLIT, $0-96
	MOVQ w_base+0(FP), DI
	MOVQ w_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ rows_base+48(FP), R9
	MOVQ rows_len+56(FP), R10
	MOVQ t_base+72(FP), R11
	VMOVDQU32 perm10<>+0(SB), Z10
	VMOVDQU32 perm10<>+64(SB), Z11
	VMOVDQU32 perm10<>+128(SB), Z12
	VMOVDQU32 perm10<>+192(SB), Z13
	VMOVDQU32 perm10<>+256(SB), Z14
	XORQ R12, R12 // byte offset of the block within a row of x

b10:
	CMPQ CX, $80
	JLT  b10done
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	XORQ BX, BX
	MOVQ R11, DX

b10j:
	// Two examples per iteration into two sets of accumulators (Z0–Z4 and
	// Z15–Z19), to halve the FMA latency chains.
	LEAQ 1(BX), AX
	CMPQ AX, R10
	JGE  b10one
	MOVQ (R9)(BX*8), AX
	LEAQ (SI)(AX*4), AX
	VMOVUPS 0(AX)(R12*1), Y5
	MOVQ 8(R9)(BX*8), AX
	LEAQ (SI)(AX*4), AX
	VMOVUPS 0(AX)(R12*1), Y20
	VPERMPS Z5, Z10, Z6
	VPERMPS Z20, Z10, Z21
	VFMADD231PS 0(DX), Z6, Z0
	VFMADD231PS 320(DX), Z21, Z15
	VPERMPS Z5, Z11, Z7
	VPERMPS Z20, Z11, Z22
	VFMADD231PS 64(DX), Z7, Z1
	VFMADD231PS 384(DX), Z22, Z16
	VPERMPS Z5, Z12, Z8
	VPERMPS Z20, Z12, Z23
	VFMADD231PS 128(DX), Z8, Z2
	VFMADD231PS 448(DX), Z23, Z17
	VPERMPS Z5, Z13, Z9
	VPERMPS Z20, Z13, Z24
	VFMADD231PS 192(DX), Z9, Z3
	VFMADD231PS 512(DX), Z24, Z18
	VPERMPS Z5, Z14, Z6
	VPERMPS Z20, Z14, Z21
	VFMADD231PS 256(DX), Z6, Z4
	VFMADD231PS 576(DX), Z21, Z19
	ADDQ $640, DX
	ADDQ $2, BX
	JMP  b10j

b10one:
	CMPQ BX, R10
	JGE  b10sum
	MOVQ (R9)(BX*8), AX
	LEAQ (SI)(AX*4), AX
	VMOVUPS 0(AX)(R12*1), Y5
	VPERMPS Z5, Z10, Z6
	VFMADD231PS 0(DX), Z6, Z0
	VPERMPS Z5, Z11, Z7
	VFMADD231PS 64(DX), Z7, Z1
	VPERMPS Z5, Z12, Z8
	VFMADD231PS 128(DX), Z8, Z2
	VPERMPS Z5, Z13, Z9
	VFMADD231PS 192(DX), Z9, Z3
	VPERMPS Z5, Z14, Z6
	VFMADD231PS 256(DX), Z6, Z4

b10sum:
	VADDPS Z15, Z0, Z0
	VADDPS Z16, Z1, Z1
	VADDPS Z17, Z2, Z2
	VADDPS Z18, Z3, Z3
	VADDPS Z19, Z4, Z4

b10st:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	ADDQ $320, DI
	ADDQ $32, R12
	SUBQ $80, CX
	JMP  b10

b10done:
	VZEROUPPER
	RET
