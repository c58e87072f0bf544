package main

// chat.go - the chatroom benchmark in one process.  Each room has U
// users; each user is three goroutines, as the original's client and
// server threads: a sender that writes M messages of B bytes to its
// upstream channel, a server-side handler that reads them and forwards
// each to the inbox of every other user of the room, and a receiver
// that reads (U-1) x M messages from its inbox and copies each payload
// into its own buffer.  A message is filled once by its sender and
// shared read-only by its recipients (the copy a socket makes is the
// receiver's copy).  Channels hold 15 messages
// (as the fiber peer, whose capacity-16 ring keeps one slot free).  msgs_per_s = R x U x M
// x (U-1) deliveries / wall, from the first spawn to the last receipt.
// Not time-based: seconds is accepted and ignored.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

const chatQueue = 15 // as the fiber peer's capacity-16 ring

var chatSink uint64

func runChat(a *args) (pairs, error) {
	rooms := a.int("rooms", 1, 1, 1<<16)
	users := a.int("users", 20, 2, 1<<16)
	msgs := a.int("messages", 100, 1, 1<<24)
	size := a.int("msg_bytes", 100, 1, 1<<20)
	w, _ := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	runtime.GOMAXPROCS(w)
	var wg sync.WaitGroup
	t0 := now()
	for r := 0; r < rooms; r++ {
		chatRoom(users, msgs, size, &wg)
	}
	wg.Wait()
	wall := float64(now() - t0)
	var out pairs
	out.add("msgs_per_s", float64(rooms*users*msgs*(users-1))/(wall/1e9))
	out.add("workers", float64(w))
	return out, nil
}

func chatRoom(users, msgs, size int, wg *sync.WaitGroup) {
	inbox := make([]chan []byte, users)
	for i := range inbox {
		inbox[i] = make(chan []byte, chatQueue)
	}
	wg.Add(3 * users)
	for i := 0; i < users; i++ {
		up := make(chan []byte, chatQueue)
		go chatSender(up, msgs, size, byte(i), wg)
		go chatHandler(up, inbox, i, wg)
		go chatReceiver(inbox[i], (users-1)*msgs, size, wg)
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
