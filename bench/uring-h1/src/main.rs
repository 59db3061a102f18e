//! A lean HTTP/1.1 keep-alive closed loop over io_uring: CONNS connections, each
//! sending `GET PATH` and reading the response to its end (by Content-Length), then the
//! next. Each send is linked to its first recv, and the ring is entered once per batch of
//! completions, with task work deferred to that entry (DEFER_TASKRUN; `PLAIN=1` leaves the
//! ring's defaults). No multishot recv, provided buffers or registered files: each recv is
//! armed before its response exists. It records nothing: it prices the system calls, to set beside wrk and
//! barrage (bench/results/2026-11-29_1255-i36-io-uring.md). Prints requests and wall time;
//! measure its CPU from outside: `taskset -c 1 perf stat -e task-clock uring-h1 ADDR PATH
//! CONNS SECONDS`. Loopback only, as the bench.
use io_uring::{opcode, squeue, types, IoUring};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

struct Conn {
    sock: TcpStream,
    buf: Vec<u8>,
    have: usize,
}

fn response_len(b: &[u8]) -> Option<usize> {
    let end = b.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&b[..end]).ok()?;
    let cl = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok()).flatten()
    })?;
    Some(end + cl)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = &args[1];
    assert!(addr.starts_with("127."), "loopback only: {addr}");
    let path = &args[2];
    let conns: usize = args[3].parse().unwrap();
    let secs: u64 = args[4].parse().unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let mut cs: Vec<Conn> = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            Conn { sock: s, buf: vec![0; 64 * 1024], have: 0 }
        })
        .collect();
    let mut ring: IoUring = if std::env::var("PLAIN").is_ok() {
        IoUring::new(4 * conns as u32).unwrap()
    } else {
        IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(4 * conns as u32)
            .unwrap()
    };
    // SAFETY (every push): the socket and buffer an entry names live in `cs` until the
    // loop ends, and a connection has at most one recv in flight.
    let push = |ring: &mut IoUring, e: squeue::Entry| unsafe { ring.submission().push(&e).unwrap() };
    let send_recv = |ring: &mut IoUring, i: usize, c: &mut Conn| {
        let fd = types::Fd(c.sock.as_raw_fd());
        let s = opcode::Send::new(fd, req.as_ptr(), req.len() as u32)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data((i as u64) << 1);
        let r = opcode::Recv::new(fd, c.buf.as_mut_ptr(), c.buf.len() as u32).build().user_data((i as u64) << 1 | 1);
        push(ring, s);
        push(ring, r);
    };
    for (i, c) in cs.iter_mut().enumerate() {
        send_recv(&mut ring, i, c);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut done = 0u64;
    let mut stopping = false;
    let mut inflight = conns;
    while inflight > 0 {
        ring.submit_and_wait(1).unwrap();
        let cqes: Vec<(u64, i32)> = ring.completion().map(|e| (e.user_data(), e.result())).collect();
        let now_past = Instant::now() >= end;
        stopping |= now_past;
        for (ud, res) in cqes {
            let i = (ud >> 1) as usize;
            if ud & 1 == 0 {
                assert!(res >= 0, "send: {res}");
                continue;
            }
            assert!(res > 0, "recv: {res}");
            let c = &mut cs[i];
            c.have += res as usize;
            match response_len(&c.buf[..c.have]) {
                Some(n) if c.have >= n => {
                    c.have -= n;
                    assert_eq!(c.have, 0, "pipelined bytes");
                    done += 1;
                    if stopping {
                        inflight -= 1;
                    } else {
                        send_recv(&mut ring, i, c);
                    }
                }
                _ => {
                    let fd = types::Fd(c.sock.as_raw_fd());
                    let r =
                        opcode::Recv::new(fd, unsafe { c.buf.as_mut_ptr().add(c.have) }, (c.buf.len() - c.have) as u32)
                            .build()
                            .user_data((i as u64) << 1 | 1);
                    push(&mut ring, r);
                }
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!("requests {done} wall {wall:.3} rps {:.0}", done as f64 / wall);
}
