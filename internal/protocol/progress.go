package protocol

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progressEvery is how often a waiting call reports progress: often enough that a client
// shows the wait is alive, rarely enough not to flood it.
const progressEvery = time.Second

// ReportProgress sends notifications/progress for a waiting call that carries a
// progressToken, every progressEvery, with the message report returns, until the returned
// stop is called; call stop before the call's result is returned. ctx is the call's: its
// mcp-go session carries the notifications. The progress value counts the notifications,
// since the spec wants it to increase every time and a wait has no natural measure that
// does; the message says what is going on. mcp-go writes notifications from a goroutine
// of its own, so one handed over just before stop could still reach the wire after the
// response: the Session in front of it drops those. Without a token it does nothing.
func ReportProgress(ctx context.Context, req mcp.CallToolRequest, report func() string) (stop func()) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return func() {}
	}
	token := req.Params.Meta.ProgressToken
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			params := map[string]any{"progressToken": token, "progress": n, "message": report()}
			// Best effort: a client that went away must not fail the call.
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
