//! Flow-control windows (RFC 9113 5.2, 6.9) as values: what we may still send, and what the
//! server sent that we have not given back yet. Apart from the connection so that their
//! arithmetic (grants, overflow, windows gone negative) is tested by tables.

/// The largest window (RFC 9113 6.9.1).
pub(super) const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A window grew past [`MAX_WINDOW`]: a flow-control error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Overflow;

/// What we may still send on a stream or the connection: the server's grants less what we
/// sent. It goes negative when the server lowers SETTINGS_INITIAL_WINDOW_SIZE below what
/// a stream has in flight (RFC 9113 6.9.2), and then nothing is sent until grants make up
/// for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SendWindow(i64);

impl SendWindow {
    pub(super) const fn new(size: i64) -> SendWindow {
        SendWindow(size)
    }

    /// What may be sent now (0 or less: nothing).
    #[inline]
    pub(super) fn available(self) -> i64 {
        self.0
    }

    /// `n` bytes of DATA sent.
    #[inline]
    pub(super) fn consume(&mut self, n: i64) {
        self.0 -= n;
    }

    /// A WINDOW_UPDATE's increment: an error when it takes the window past 2^31-1.
    pub(super) fn grant(&mut self, inc: i64) -> Result<(), Overflow> {
        self.0 += inc;
        if self.0 > MAX_WINDOW {
            return Err(Overflow);
        }
        Ok(())
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE changed by `delta`, which may be negative: an error when
    /// it takes the window past 2^31-1.
    pub(super) fn resize(&mut self, delta: i64) -> Result<(), Overflow> {
        self.grant(delta)
    }
}

/// What the server may send us before we give it back: `size` bytes, of which `unacked`
/// were received and not yet given back by a WINDOW_UPDATE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct RecvWindow {
    size: u32,
    unacked: u32,
}

impl RecvWindow {
    pub(super) const fn new(size: u32) -> RecvWindow {
        RecvWindow { size, unacked: 0 }
    }

    /// `len` bytes received (a whole DATA frame, padding included): an error when they go
    /// beyond the window.
    #[inline]
    pub(super) fn receive(&mut self, len: u32) -> Result<(), Overflow> {
        self.unacked += len;
        if self.unacked > self.size {
            return Err(Overflow);
        }
        Ok(())
    }

    /// Whether the server sent all the window allows: it waits for a WINDOW_UPDATE.
    #[inline]
    pub(super) fn full(self) -> bool {
        self.unacked == self.size
    }

    /// The increment to give back, once half the window is used (one WINDOW_UPDATE per half
    /// window, not per frame).
    #[inline]
    pub(super) fn take_update(&mut self) -> Option<u32> {
        (self.unacked >= self.size / 2).then(|| std::mem::take(&mut self.unacked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    enum Send {
        Consume(i64),
        Grant(i64),
        Resize(i64),
    }

    /// Each row: a window's start, what happens to it, then what may be sent, or the
    /// overflow.
    #[test]
    fn a_send_window_is_granted_consumed_and_resized() {
        use Send::*;
        type Row = (&'static str, i64, &'static [Send], Result<i64, Overflow>);
        let table: [Row; 8] = [
            ("consumed", 65_535, &[Consume(16_384)], Ok(49_151)),
            ("consumed to nothing", 100, &[Consume(100)], Ok(0)),
            ("granted", 0, &[Grant(1_000)], Ok(1_000)),
            ("granted to the largest", 65_535, &[Grant(MAX_WINDOW - 65_535)], Ok(MAX_WINDOW)),
            ("granted past 2^31-1", 65_535, &[Grant(MAX_WINDOW - 65_534)], Err(Overflow)),
            ("resized down under what is in flight", 65_535, &[Consume(60_000), Resize(1_000 - 65_535)], Ok(-59_000)),
            ("negative, granted back", 65_535, &[Consume(60_000), Resize(-65_535), Grant(70_000)], Ok(10_000)),
            ("resized past 2^31-1", MAX_WINDOW - 10, &[Resize(11)], Err(Overflow)),
        ];
        for (what, start, steps, want) in table {
            let mut w = SendWindow::new(start);
            let mut got = Ok(());
            for step in steps {
                got = got.and_then(|()| match *step {
                    Consume(n) => {
                        w.consume(n);
                        Ok(())
                    }
                    Grant(n) => w.grant(n),
                    Resize(n) => w.resize(n),
                });
            }
            assert_eq!(got.map(|()| w.available()), want, "{what}");
        }
    }

    /// Each row: a window of 100, the frames received, then the updates given back along
    /// the way and whether it ended full, or the overflow.
    #[test]
    fn a_receive_window_gives_back_each_half_and_refuses_more_than_it_holds() {
        type Got = Result<(Vec<u32>, bool), Overflow>;
        let table: [(&str, &[u32], Got); 6] = [
            ("under half", &[10, 30], Ok((vec![], false))),
            ("half: given back", &[10, 40], Ok((vec![50], false))),
            ("each half", &[60, 10, 50], Ok((vec![60, 60], false))),
            ("all of it at once", &[100], Ok((vec![100], false))),
            ("beyond", &[40, 61], Err(Overflow)),
            ("empty frames", &[0, 0], Ok((vec![], false))),
        ];
        for (what, frames, want) in table {
            let mut w = RecvWindow::new(100);
            let mut updates = Vec::new();
            let got = frames
                .iter()
                .try_for_each(|&len| {
                    w.receive(len)?;
                    updates.extend(w.take_update());
                    Ok(())
                })
                .map(|()| (updates, w.full()));
            assert_eq!(got, want, "{what}");
        }
        // Full, before it is given back: the server waits.
        let mut w = RecvWindow::new(100);
        w.receive(100).unwrap();
        assert!(w.full());
        assert_eq!(w.take_update(), Some(100));
        assert!(!w.full());
    }
}
