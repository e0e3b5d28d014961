//! Shared by the hipcc integration tests.

use hip_build::Hipcc;

/// The found hipcc; without one, prints `SKIPPED: hipcc not installed` and
/// gives `None`, except under CI (`CI` set), which installs it: there a
/// missing hipcc fails the test.
pub fn hipcc() -> Option<Hipcc> {
    match Hipcc::locate() {
        Ok(h) => Some(h),
        Err(e) if std::env::var_os("CI").is_some() => panic!("CI installs hipcc: {e}"),
        Err(_) => {
            println!("SKIPPED: hipcc not installed");
            None
        }
    }
}
