//! A child process's CPU time and resident memory from `/proc` (Linux), for the benchmarks that
//! run the controller or `kruise serve` as a child of their own.

use std::time::Duration;

fn read(pid: u32, file: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default()
}

/// CPU time of the whole process (utime + stime of /proc/PID/stat, in clock ticks of 10 ms).
pub fn cpu(pid: u32) -> Duration {
    let stat = read(pid, "stat");
    let after_name = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of stat; `after_name` starts at field 3.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// (peak, current) resident set in MiB: VmHWM and VmRSS.
pub fn rss_mib(pid: u32) -> (f64, f64) {
    let text = read(pid, "status");
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}
