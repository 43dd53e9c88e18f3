//go:build tools

// Package tools pins the Kubernetes release whose kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl the node-mode suites run against; it is never compiled into anything.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
