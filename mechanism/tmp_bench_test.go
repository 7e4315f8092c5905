package mechanism
import ("testing";"math")
func BenchmarkTmpDraw(b *testing.B){ r:=must(NewLaplace(1,1)); _ = r; rr := newR(); k:=clapK(2,1); s:=0.0; for b.Loop(){ s+=clapDraw(rr.Float64(), 0.5, 2, 1, k) }; sink=s}
func BenchmarkTmpExpLog(b *testing.B){ rr := newR(); s:=0.0; for b.Loop(){ u:=rr.Float64(); s+=math.Exp(-u)+math.Log(1-u) }; sink=s}
func BenchmarkTmpSignedExp(b *testing.B){ rr := newR(); s:=0.0; for b.Loop(){ s+=signedExp(rr) }; sink=s}
func BenchmarkTmpUF(b *testing.B){ rr := newR(); s:=0.0; for b.Loop(){ s+=uniformFull(rr, rr.Uint64()<<1, 63) }; sink=s}
func BenchmarkTmpFloor(b *testing.B){ rr := newR(); s:=0.0; for b.Loop(){ s+=math.Log(rr.Float64()) }; sink=s}
