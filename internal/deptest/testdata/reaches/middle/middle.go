// Package middle stands between reaches and the package the checker's test bans.
package middle

import _ "github.com/mcp-harness/mcp-harness/internal/quote"
