// Package reaches imports a banned package through another, for the checker's own test.
package reaches

import _ "github.com/mcp-harness/mcp-harness/internal/deptest/testdata/reaches/middle"
