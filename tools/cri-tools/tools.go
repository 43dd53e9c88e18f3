//go:build tools

// Package tools pins the cri-tools version that builds crictl and critest for
// the end-to-end suites; it is never compiled into anything.
package tools

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
	_ "sigs.k8s.io/cri-tools/cmd/critest"
)
