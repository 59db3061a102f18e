//! What the machine's TCP congestion control does to figures measured on loopback.
//!
//! Every server of the testbed sends under the machine's `net.ipv4.tcp_congestion_control`.
//! bbr paces each connection by its estimate of the path, and on loopback that pacing, not
//! the server, sets how fast large responses go (what was measured is in
//! `bench/results/2026-11-29_1440-i36-congestion-control.txt`). A testbed that comes up
//! under bbr says so, with the remedy.

/// Where Linux keeps the congestion control new connections get.
const SETTING: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// The note for this machine's congestion control, when it paces loopback (`None` when it
/// does not, or cannot be read).
pub fn congestion_note() -> Option<String> {
    note_for(std::fs::read_to_string(SETTING).ok()?.trim())
}

/// The note for congestion control `cc`: of Linux's, bbr (and its versions, `bbr2`, `bbr3`)
/// paces by itself, without the `fq` queueing discipline.
fn note_for(cc: &str) -> Option<String> {
    cc.starts_with("bbr").then(|| {
        format!(
            "note: this machine's TCP congestion control is {cc}, which paces each connection: on loopback, \
             responses of 256 KiB and more then measure the pacing (nginx spent 1.6-6x the CPU on each that it \
             does under cubic). For the servers' own figures: `sysctl -w net.ipv4.tcp_congestion_control=cubic` \
             first (see docs/testbed.md)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bbr_gets_the_note_and_it_names_the_remedy() {
        for cc in ["bbr", "bbr2"] {
            let note = note_for(cc).expect("bbr paces");
            assert!(note.contains(cc) && note.contains("net.ipv4.tcp_congestion_control=cubic"), "{note}");
        }
        for cc in ["cubic", "reno", "dctcp", ""] {
            assert_eq!(note_for(cc), None, "{cc}");
        }
    }
}
