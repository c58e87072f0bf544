package main

// chat.go - the chatroom benchmark in one process.  Each room has U
// users; each user is four goroutines, as the original's client and
// server threads and as mqs-bench's own rows: a sender that writes M
// messages of B bytes to its upstream channel, a server reader that
// reads them and puts each on the out-queue of every other user of the
// room, a server writer that moves its user's out-queue onto the user's
// downstream channel, and a receiver that reads (U-1) x M messages from
// it and copies each payload into its own buffer.  A message is filled
// once by its sender and shared read-only by its recipients (the copy a
// socket makes is the receiver's copy).  Channels hold chatQueue (64)
// messages, as mqs-bench's (the fiber peer's capacity-64 ring holds 63).
// msgs_per_s = R x U x M x (U-1) deliveries / wall, from the first spawn
// to the last receipt.  Not time-based: seconds is accepted and ignored.
//
// transport=tcp (mqs-bench's default): as the original and as mqs-bench's
// rows, each user's connection is a loopback TCP connection (net package,
// Nagle off): the upstream and downstream channels above become the
// connection's two directions; a receiver reads the client end in pieces
// of up to 8 KiB until it has (U-1) x M x B bytes.  transport=chan: the
// channels-only version above.

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

const chatQueue = 64 // as mqs-bench's CHAT_CAPACITY

var chatSink uint64

func runChat(a *args) (pairs, error) {
	rooms := a.int("rooms", 1, 1, 1<<16)
	users := a.int("users", 20, 2, 1<<16)
	msgs := a.int("messages", 100, 1, 1<<24)
	size := a.int("msg_bytes", 100, 1, 1<<20)
	tcp := a.choice("transport", "chan", "tcp", "chan") == "tcp"
	w, _ := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	runtime.GOMAXPROCS(w)
	var wg sync.WaitGroup
	var conns [][2]net.Conn
	if tcp {
		var err error
		if conns, err = chatConns(rooms * users); err != nil {
			return nil, err
		}
		defer func() {
			for _, c := range conns {
				c[0].Close()
				c[1].Close()
			}
		}()
	}
	var bad int32
	t0 := now()
	for r := 0; r < rooms; r++ {
		if tcp {
			chatRoomTCP(users, msgs, size, conns[r*users:(r+1)*users], &wg, &bad)
		} else {
			chatRoom(users, msgs, size, &wg)
		}
	}
	wg.Wait()
	if atomic.LoadInt32(&bad) != 0 {
		return nil, fmt.Errorf("chat over tcp: a connection failed or lost bytes")
	}
	wall := float64(now() - t0)
	var out pairs
	out.add("msgs_per_s", float64(rooms*users*msgs*(users-1))/(wall/1e9))
	out.add("workers", float64(w))
	return out, nil
}

func chatRoom(users, msgs, size int, wg *sync.WaitGroup) {
	outq := make([]chan []byte, users)
	for i := range outq {
		outq[i] = make(chan []byte, chatQueue)
	}
	wg.Add(4 * users)
	for i := 0; i < users; i++ {
		up := make(chan []byte, chatQueue)
		down := make(chan []byte, chatQueue)
		go chatSender(up, msgs, size, byte(i), wg)
		go chatHandler(up, outq, i, wg)
		go chatWriter(outq[i], down, (users-1)*msgs, wg)
		go chatReceiver(down, (users-1)*msgs, size, wg)
	}
}

// chatWriter moves n messages from a user's out-queue to its downstream.
func chatWriter(in <-chan []byte, down chan<- []byte, n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < n; i++ {
		down <- <-in
	}
}

func chatSender(up chan<- []byte, msgs, size int, who byte, wg *sync.WaitGroup) {
	defer wg.Done()
	for m := 0; m < msgs; m++ {
		b := make([]byte, size)
		for i := range b {
			b[i] = who + byte(m)
		}
		up <- b
	}
	close(up)
}

func chatHandler(up <-chan []byte, inbox []chan []byte, self int, wg *sync.WaitGroup) {
	defer wg.Done()
	for b := range up {
		for i, c := range inbox {
			if i != self {
				c <- b
			}
		}
	}
}

func chatReceiver(in <-chan []byte, n, size int, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, size)
	var acc uint64
	for i := 0; i < n; i++ {
		copy(buf, <-in)
		acc += uint64(buf[0])
	}
	atomic.AddUint64(&chatSink, acc)
}

// n loopback TCP connections: [0] the client end, [1] the server end.
func chatConns(n int) ([][2]net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	out := make([][2]net.Conn, n)
	for i := range out {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return nil, err
		}
		s, err := ln.Accept()
		if err != nil {
			return nil, err
		}
		out[i] = [2]net.Conn{c, s} // net sets TCP_NODELAY by default
	}
	return out, nil
}

func chatRoomTCP(users, msgs, size int, conns [][2]net.Conn, wg *sync.WaitGroup, bad *int32) {
	outq := make([]chan []byte, users)
	for i := range outq {
		outq[i] = make(chan []byte, chatQueue)
	}
	n := (users - 1) * msgs
	wg.Add(4 * users)
	for i := 0; i < users; i++ {
		cli, srv := conns[i][0], conns[i][1]
		go func(who byte) { // sender
			defer wg.Done()
			b := make([]byte, size)
			for m := 0; m < msgs; m++ {
				for k := range b {
					b[k] = who + byte(m)
				}
				if _, err := cli.Write(b); err != nil {
					atomic.AddInt32(bad, 1)
					return
				}
			}
		}(byte(i))
		go func(self int) { // server reader
			defer wg.Done()
			for m := 0; m < msgs; m++ {
				b := make([]byte, size)
				if _, err := io.ReadFull(srv, b); err != nil {
					atomic.AddInt32(bad, 1)
					return
				}
				for k, c := range outq {
					if k != self {
						c <- b
					}
				}
			}
		}(i)
		go func(in <-chan []byte) { // server writer
			defer wg.Done()
			for m := 0; m < n; m++ {
				if _, err := srv.Write(<-in); err != nil {
					atomic.AddInt32(bad, 1)
					return
				}
			}
		}(outq[i])
		go func() { // receiver
			defer wg.Done()
			buf := make([]byte, 8192)
			var acc uint64
			for left := n * size; left > 0; {
				k := len(buf)
				if left < k {
					k = left
				}
				got, err := io.ReadFull(cli, buf[:k])
				if err != nil {
					atomic.AddInt32(bad, 1)
					return
				}
				acc += uint64(buf[0])
				left -= got
			}
			atomic.AddUint64(&chatSink, acc)
		}()
	}
}
