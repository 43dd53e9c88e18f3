//go:build tools

// Package tools pins the kwok release the scale benchmark compares against; it is never
// compiled into anything.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
