//! Which HIP releases the generated kernels and the HIP layer support.
//!
//! Build scripts call [`check_hip_version`] with the found hipcc's version so
//! that an unsupported ROCm fails at build time, with the supported releases
//! named, instead of at run time.

/// The oldest HIP release supported: Debian bookworm's 5.2.3 (kernels for
/// gfx90a and gfx1030, the HIP layer's ABI).
pub const OLDEST_SUPPORTED: (u32, u32) = (5, 2);

/// The releases the project compiles, links and tests against (README,
/// "Supported platforms"): HIP 5.2 (Debian bookworm), ROCm 6.4 and 7.2
/// (`rocm-releases.toml`).
pub const TESTED: &[(u32, u32)] = &[(5, 2), (6, 4), (7, 2)];

/// What a hipcc version (`7.2.53211-9999`, `5.2.21153-0`) means for a build.
#[derive(Debug, PartialEq, Eq)]
pub enum Support {
    /// One of [`TESTED`].
    Tested,
    /// Between the oldest and the newest tested release, or newer: expected
    /// to work, not tested; the string says so for a build warning.
    Untested(String),
}

/// The HIP major and minor version of a hipcc version string
/// (`7.2.53211-9999` → `(7, 2)`); `None` unless both are decimal digits.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '-']);
    let digits = |p: &str| (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse().ok()).flatten();
    Some((digits(parts.next()?)?, digits(parts.next()?)?))
}

/// `Err` (naming the supported releases) for a release older than
/// [`OLDEST_SUPPORTED`] or a version that cannot be read.
pub fn check_hip_version(version: &str) -> Result<Support, String> {
    let tested: Vec<String> = TESTED.iter().map(|(a, b)| format!("{a}.{b}")).collect();
    let Some((major, minor)) = major_minor(version) else {
        return Err(format!("cannot read a HIP version from `{version}` (expected MAJOR.MINOR...)"));
    };
    if (major, minor) < OLDEST_SUPPORTED {
        return Err(format!(
            "HIP {major}.{minor} is older than the oldest supported release, {}.{}: the generated kernels need its compiler and the HIP layer its ABI. Supported and tested: {}",
            OLDEST_SUPPORTED.0,
            OLDEST_SUPPORTED.1,
            tested.join(", ")
        ));
    }
    if TESTED.contains(&(major, minor)) {
        return Ok(Support::Tested);
    }
    Ok(Support::Untested(format!("HIP {major}.{minor} is supported but not tested here (tested: {})", tested.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_classified() {
        assert_eq!(check_hip_version("7.2.53211-9999"), Ok(Support::Tested));
        assert_eq!(check_hip_version("5.2.21153-0"), Ok(Support::Tested));
        assert!(matches!(check_hip_version("6.2.41133-0"), Ok(Support::Untested(w)) if w.contains("6.2")));
        let old = check_hip_version("5.1.20531-0").unwrap_err();
        assert!(old.starts_with("HIP 5.1 is older than the oldest supported release, 5.2") && old.ends_with("5.2, 6.4, 7.2"), "{old}");
        assert!(check_hip_version("garbage").unwrap_err().contains("`garbage`"));
        assert_eq!(major_minor("6.4.43484-9999"), Some((6, 4)));
        assert_eq!(major_minor("+7.2"), None);
        assert_eq!(major_minor("7"), None);
    }
}
