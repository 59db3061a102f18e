//! What `/proc` says of a process: enough to tell the process the supervisor started from
//! another that got its PID later.

/// The fields of `/proc/PID/stat` the testbed uses.
pub struct Stat {
    /// `R`, `S`, `Z`, …
    pub state: char,
    /// Its process group.
    pub pgrp: u32,
    /// When it started, in clock ticks since boot: with the PID, its identity.
    pub start_time: u64,
}

/// `/proc/PID/stat` of `pid`, or `None` when it is gone.
pub fn stat(pid: u32) -> Option<Stat> {
    parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The start time of `pid`, or `None` when it is gone.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_time)
}

/// The PIDs, other than `leader`, in `leader`'s process group that started no earlier than
/// it (so were forked by it or its children, not there before).
pub fn group_members(leader: u32, started: u64) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != leader)
        .filter(|&pid| stat(pid).is_some_and(|s| s.pgrp == leader && s.start_time >= started))
        .collect()
}

/// Parses a stat line. The command name (field 2) is in parentheses and may itself hold
/// spaces and parentheses: the fields are counted from the last `)`.
fn parse(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); field N is fields[N - 3].
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(5 - 3)?.parse().ok()?,
        start_time: fields.get(22 - 3)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_parentheses_and_spaces_does_not_shift_the_fields() {
        let line = "4242 (evil) 1 2 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
        let s = parse(line).unwrap();
        assert_eq!((s.state, s.pgrp, s.start_time), ('S', 4242, 987654));
    }

    #[test]
    fn this_process_has_a_start_time_and_truncated_lines_give_none() {
        assert!(start_time(std::process::id()).is_some());
        assert!(parse("1 (init) S 0 1").is_none());
        assert!(parse("garbage").is_none());
    }
}
