package testkit_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// Through an Outage: bytes flow, are held while it is cut and delivered after; after Drop the
// connections open before it never carry a byte again, while new ones work.
func TestOutageCutRestoreAndDrop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var echoes sync.WaitGroup
	// Cleanups run last in first out: the Outage closes its connections, then the echoes end.
	t.Cleanup(func() { _ = ln.Close(); echoes.Wait() })
	echoes.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			echoes.Go(func() { defer func() { _ = c.Close() }(); _, _ = io.Copy(c, c) })
		}
	})
	o := testkit.NewOutage(t, &rest.Config{Host: "http://" + ln.Addr().String()})
	u, err := url.Parse(o.Config().Host)
	require.NoError(t, err)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	echo := func(c net.Conn, msg string) {
		t.Helper()
		_, err := c.Write([]byte(msg))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, len(msg))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		assert.Equal(t, msg, string(buf))
	}

	before := dial()
	echo(before, "up")
	o.Cut()
	_, err = before.Write([]byte("held"))
	require.NoError(t, err)
	o.Restore()
	buf := make([]byte, 4)
	require.NoError(t, before.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadFull(before, buf)
	require.NoError(t, err)
	assert.Equal(t, "held", string(buf), "bytes held during the cut are delivered after it")

	o.Cut()
	o.Drop()
	o.Restore()
	after := dial()
	_, err = before.Write([]byte("lost"))
	require.NoError(t, err)
	echo(after, "new") // a connection made after Drop works, and has had the time to carry the lost bytes back
	require.NoError(t, before.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = before.Read(buf)
	assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "a dropped connection carries nothing, and is not closed: %v", err)
}
