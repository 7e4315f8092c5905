//go:build !purego

#include "textflag.h"

// func pool2AVX512(dst *float32, arg *uint8, r0, r1 *float32, n int)
//
// pool2 with 64 channels per pixel, 16 at a time: the running maximum starts
// at the top-left value and is replaced (with its position) by each later
// value of the window that is strictly greater, so the first maximum wins as
// in pool2.
TEXT ·pool2AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ arg+8(FP), R8
	MOVQ r0+16(FP), SI
	MOVQ r1+24(FP), DX
	MOVQ n+32(FP), CX
	MOVL $1, AX
	VPBROADCASTD AX, Z10
	MOVL $2, AX
	VPBROADCASTD AX, Z11
	MOVL $3, AX
	VPBROADCASTD AX, Z12

poolpix:
	TESTQ CX, CX
	JZ    pooldone
#define POOLBLOCK(q) \
	VMOVUPS (q*64)(SI), Z0 \
	VMOVUPS (256+q*64)(SI), Z1 \
	VMOVUPS (q*64)(DX), Z2 \
	VMOVUPS (256+q*64)(DX), Z3 \
	VPXORD  Z4, Z4, Z4 \
	VCMPPS  $0x1e, Z0, Z1, K1 \
	VMOVAPS Z1, K1, Z0 \
	VMOVDQA32 Z10, K1, Z4 \
	VCMPPS  $0x1e, Z0, Z2, K2 \
	VMOVAPS Z2, K2, Z0 \
	VMOVDQA32 Z11, K2, Z4 \
	VCMPPS  $0x1e, Z0, Z3, K3 \
	VMOVAPS Z3, K3, Z0 \
	VMOVDQA32 Z12, K3, Z4 \
	VMOVUPS Z0, (q*64)(DI) \
	VPMOVDB Z4, (q*16)(R8)
	POOLBLOCK(0)
	POOLBLOCK(1)
	POOLBLOCK(2)
	POOLBLOCK(3)
	ADDQ $512, SI
	ADDQ $512, DX
	ADDQ $256, DI
	ADDQ $64, R8
	DECQ CX
	JMP  poolpix

pooldone:
	VZEROUPPER
	RET

// func reluMaskAVX512(d, a, sum *float32, n int)
//
// For n pixels of 32 channels: d[i] = 0 where !(a[i] > 0), and sum[c] += the
// masked d of channel c, pixel by pixel.
TEXT ·reluMaskAVX512(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ sum+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS (DX), Z8
	VMOVUPS 64(DX), Z9
	VPXORD  Z7, Z7, Z7
	TESTQ CX, CX
	JZ    maskdone

maskpix:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VCMPPS  $0x1e, Z7, Z0, K1
	VCMPPS  $0x1e, Z7, Z1, K2
	VMOVUPS.Z (DI), K1, Z2
	VMOVUPS.Z 64(DI), K2, Z3
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, 64(DI)
	VADDPS  Z2, Z8, Z8
	VADDPS  Z3, Z9, Z9
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  maskpix

maskdone:
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	VZEROUPPER
	RET

// Channel numbers 0..15 for the compressed window lists.
DATA cnniota<>+0(SB)/4, $0
DATA cnniota<>+4(SB)/4, $1
DATA cnniota<>+8(SB)/4, $2
DATA cnniota<>+12(SB)/4, $3
DATA cnniota<>+16(SB)/4, $4
DATA cnniota<>+20(SB)/4, $5
DATA cnniota<>+24(SB)/4, $6
DATA cnniota<>+28(SB)/4, $7
DATA cnniota<>+32(SB)/4, $8
DATA cnniota<>+36(SB)/4, $9
DATA cnniota<>+40(SB)/4, $10
DATA cnniota<>+44(SB)/4, $11
DATA cnniota<>+48(SB)/4, $12
DATA cnniota<>+52(SB)/4, $13
DATA cnniota<>+56(SB)/4, $14
DATA cnniota<>+60(SB)/4, $15
GLOBL cnniota<>(SB), RODATA|NOPTR, $64

// func scanCellAVX512(pl, dp *float32, arg *uint8, wIdx *int32, wVal *float32, cnt *[4]int, gb *float32)
//
// scanCellGo for one pooled pixel, 16 channels at a time: the kept deltas
// are compressed (VCOMPRESSPS into a register, then a full store, so every
// list has 16 entries of slack) into the list of their window position.
TEXT ·scanCellAVX512(SB), NOSPLIT, $0-56
	MOVQ pl+0(FP), SI
	MOVQ dp+8(FP), DX
	MOVQ arg+16(FP), R8
	MOVQ wIdx+24(FP), DI
	MOVQ wVal+32(FP), R9
	MOVQ cnt+40(FP), R10
	MOVQ gb+48(FP), R11
	MOVQ 0(R10), R12
	MOVQ 8(R10), R13
	MOVQ 16(R10), BX
	MOVQ 24(R10), CX
	VPXORD Z7, Z7, Z7
	VMOVDQU32 cnniota<>(SB), Z20
	MOVL $16, AX
	VPBROADCASTD AX, Z21
	MOVL $1, AX
	VPBROADCASTD AX, Z23
	MOVL $2, AX
	VPBROADCASTD AX, Z24
	MOVL $3, AX
	VPBROADCASTD AX, Z25

#define SCANLIST(a, Za, cntreg) \
	VPCMPEQD Za, Z4, K1, K2 \
	VCOMPRESSPS.Z Z2, K2, Z5 \
	VPCOMPRESSD.Z Z20, K2, Z6 \
	VMOVUPS Z5, (a*320)(R9)(cntreg*4) \
	VMOVDQU32 Z6, (a*320)(DI)(cntreg*4) \
	KMOVW K2, AX \
	POPCNTL AX, AX \
	ADDQ AX, cntreg

#define SCANBLOCK(q) \
	VMOVUPS (q*64)(SI), Z0 \
	VMOVUPS (q*64)(DX), Z1 \
	VCMPPS $0x1e, Z7, Z0, K1 \
	VCMPPS $4, Z7, Z1, K1, K1 \
	VMOVAPS.Z Z1, K1, Z2 \
	VADDPS (q*64)(R11), Z2, Z3 \
	VMOVUPS Z3, (q*64)(R11) \
	VPMOVZXBD (q*16)(R8), Z4 \
	SCANLIST(0, Z7, R12) \
	SCANLIST(1, Z23, R13) \
	SCANLIST(2, Z24, BX) \
	SCANLIST(3, Z25, CX) \
	VPADDD Z21, Z20, Z20

	SCANBLOCK(0)
	SCANBLOCK(1)
	SCANBLOCK(2)
	SCANBLOCK(3)
	MOVQ R12, 0(R10)
	MOVQ R13, 8(R10)
	MOVQ BX, 16(R10)
	MOVQ CX, 24(R10)
	VZEROUPPER
	RET
