//go:build tools

// Package tools pins the etcd release the node-mode suites' kube-apiserver stores its objects
// in; it is never compiled into anything. The etcd binary is the server module's own main
// package (go.etcd.io/etcd/server/v3, which calls etcdmain.Main).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
