//! Timing whole commands: wall seconds of each run, min / median / max.

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The wall seconds of several runs of one thing.
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    pub seconds: Vec<f64>,
    /// What each counted run printed on stdout.
    pub stdout: Vec<String>,
}

impl Runs {
    fn sorted(&self) -> Vec<f64> {
        let mut s = self.seconds.clone();
        s.sort_by(f64::total_cmp);
        s
    }
    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }
    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }
    /// The middle run (the mean of the two middle ones for an even count).
    pub fn median(&self) -> f64 {
        let s = self.sorted();
        match s.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }
}

/// Runs `make()`'s command `runs` times after `warmup` uncounted runs; each
/// must succeed (its stderr is shown if not). `before` runs before each run,
/// untimed (e.g. to give each run a fresh directory).
pub fn time_command(label: &str, warmup: usize, runs: usize, before: &mut dyn FnMut(usize) -> Result<()>, make: &dyn Fn(usize) -> Command) -> Result<Runs> {
    let (mut seconds, mut stdout) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..warmup + runs {
        before(i)?;
        let mut cmd = make(i);
        let start = Instant::now();
        let out = cmd.output().with_context(|| format!("{label}: running {:?}", cmd.get_program()))?;
        let wall = start.elapsed().as_secs_f64();
        if !out.status.success() {
            bail!("{label}: {cmd:?} failed ({}):\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        }
        if i >= warmup {
            seconds.push(wall);
            stdout.push(String::from_utf8_lossy(&out.stdout).into_owned());
        }
    }
    Ok(Runs { seconds, stdout })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        let r = Runs { seconds: vec![3.0, 1.0, 2.0, 10.0], stdout: vec![] };
        assert_eq!((r.min(), r.median(), r.max()), (1.0, 2.5, 10.0));
        assert_eq!(Runs { seconds: vec![5.0, 1.0, 4.0], stdout: vec![] }.median(), 4.0);
        assert!(Runs { seconds: vec![], stdout: vec![] }.median().is_nan());
    }

    #[test]
    fn a_failing_command_is_an_error_with_its_output() {
        let e = time_command("t", 0, 1, &mut |_| Ok(()), &|_| {
            let mut c = Command::new("sh");
            c.args(["-c", "echo boom >&2; exit 3"]);
            c
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("boom") && e.contains("exit status: 3"), "{e}");
    }
}
