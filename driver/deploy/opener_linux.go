package deploy

import "syscall"

// openerProcAttr makes an opener process started by deploy-local get
// SIGTERM when deploy-local dies, even by kill -9, so that no opener
// outlives its analyzer.
func openerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
