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
