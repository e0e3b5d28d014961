//! `cargo xtask rocm-root RELEASE`: a pinned ROCm release in a Debian sid root
//! of its own.
//!
//! ROCm 6.4 (Debian sid) and 7.2 (Debian experimental) need sid's glibc, which
//! must not replace the host's, so each release gets a minimal sid root
//! (`debootstrap --variant=minbase`) with exactly the packages that
//! `rocm-releases.toml` pins, at `target/rocm/RELEASE/root`. Beside it:
//!
//! * `bin/in-root CMD…` runs a command inside the root, in a mount namespace of
//!   its own where the workspace, `/tmp` and the cargo home are bind-mounted at
//!   their host paths (so paths mean the same inside and out) and `/proc` is
//!   mounted; nothing stays mounted after it exits;
//! * `bin/hipcc` is `in-root /usr/bin/hipcc`: what `build-kernels --rocm` and
//!   the tests hand to hip-build;
//! * `packages.txt`: every ROCm and LLVM package installed, with its version;
//! * `complete`: written last, the pins the root was made from. A root without
//!   it (interrupted) or with other pins is removed and made again; a complete
//!   one is reused.
//!
//! Every failure is one line: not root, a missing host tool, the mirror
//! unreachable, an unknown release, a pinned version the mirror no longer has.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::workspace::workspace_root;

/// The release pins, at the workspace root.
pub const RELEASES_FILE: &str = "rocm-releases.toml";

/// `rocm-releases.toml`.
#[derive(Debug, Deserialize)]
pub struct Releases {
    pub mirror: String,
    pub base_suite: String,
    pub rocm_package_pattern: String,
    pub build_tools: Vec<String>,
    pub release: BTreeMap<String, Release>,
}

/// One ROCm release's pins.
#[derive(Debug, Deserialize)]
pub struct Release {
    /// The Debian suite its ROCm packages come from.
    pub suite: String,
    /// The sonames of the libraries the HIP layer links (`libamdhip64.so.7`, …).
    pub sonames: Vec<String>,
    /// `package=version`, exact.
    pub packages: Vec<String>,
}

impl Releases {
    pub fn load(workspace: &Path) -> Result<(Releases, String)> {
        let path = workspace.join(RELEASES_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let releases: Releases = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok((releases, text))
    }

    /// The named release, or an error listing the known ones.
    pub fn get(&self, name: &str) -> Result<&Release> {
        self.release.get(name).with_context(|| {
            format!("unknown ROCm release `{name}`: {RELEASES_FILE} pins {}", self.release.keys().cloned().collect::<Vec<_>>().join(", "))
        })
    }

    /// What a root of `name` is made from: the text its `complete` marker holds.
    fn spec(&self, name: &str, release: &Release) -> String {
        let mut spec = format!("release {name}\nmirror {}\nbase {}\nsuite {}\n", self.mirror, self.base_suite, release.suite);
        for p in self.build_tools.iter().chain(&release.packages) {
            spec.push_str(p);
            spec.push('\n');
        }
        spec
    }
}

/// `cargo xtask rocm-root`.
#[derive(clap::Args, Debug)]
pub struct RootArgs {
    /// The ROCm release (a key of rocm-releases.toml: 7.2, 6.4).
    release: String,
    /// Where the root and its wrappers go (default: target/rocm/RELEASE).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Another Debian mirror (default: the one rocm-releases.toml names).
    #[arg(long, value_name = "URL")]
    mirror: Option<String>,
}

pub fn run(args: RootArgs) -> Result<std::process::ExitCode> {
    let root = ensure(&args.release, args.dir, args.mirror)?;
    println!("ROCm {} root: {}", args.release, root.root().display());
    println!("  hipcc:      {}", root.hipcc().display());
    println!("  in-root:    {}", root.in_root().display());
    println!("  libraries:  {}", root.lib_dir().display());
    println!("  packages:   {}", root.dir.join(PACKAGES_FILE).display());
    Ok(std::process::ExitCode::SUCCESS)
}

/// A made ROCm root: `dir/root` with its wrappers in `dir/bin`.
#[derive(Debug, Clone)]
pub struct RocmRoot {
    pub release: String,
    pub dir: PathBuf,
}

const PACKAGES_FILE: &str = "packages.txt";
const COMPLETE_FILE: &str = "complete";

impl RocmRoot {
    /// The sid root itself.
    pub fn root(&self) -> PathBuf {
        self.dir.join("root")
    }
    pub fn in_root(&self) -> PathBuf {
        self.dir.join("bin/in-root")
    }
    pub fn hipcc(&self) -> PathBuf {
        self.dir.join("bin/hipcc")
    }
    /// The kernel cache of the root's hipcc (hip_build::cache): `cargo xtask
    /// build-kernels --rocm` keeps the units it compiles there, and the kernels crate
    /// built inside the root (`cargo xtask rocm-backend`) takes them from it.
    pub fn kernels_cache(&self) -> PathBuf {
        self.dir.join("kernels-cache")
    }
    /// The root's library directory, seen from the host.
    pub fn lib_dir(&self) -> PathBuf {
        self.root().join("usr/lib/x86_64-linux-gnu")
    }
    /// The path, inside the root, of one of its LLVM's tools (`llvm-objdump`
    /// → `/usr/lib/llvm-22/bin/llvm-objdump`), if it has one.
    pub fn llvm_tool(&self, name: &str) -> Option<String> {
        let lib = self.root().join("usr/lib");
        let mut found: Vec<String> = std::fs::read_dir(&lib)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str().filter(|n| n.starts_with("llvm-")).map(str::to_string))
            .filter(|dir| lib.join(dir).join("bin").join(name).is_file())
            .map(|dir| format!("/usr/lib/{dir}/bin/{name}"))
            .collect();
        found.sort();
        found.pop()
    }
    /// A command run inside the root (`bin/in-root PROGRAM`).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.in_root());
        cmd.arg(program);
        cmd
    }
}

/// The default place of a release's root: `target/rocm/RELEASE`.
pub fn default_dir(workspace: &Path, release: &str) -> PathBuf {
    workspace.join("target/rocm").join(release)
}

/// The root of `release`, made (or made again) when it is not complete.
pub fn ensure(release_name: &str, dir: Option<PathBuf>, mirror: Option<String>) -> Result<RocmRoot> {
    let workspace = workspace_root();
    let (mut releases, _) = Releases::load(&workspace)?;
    if let Some(m) = mirror {
        releases.mirror = m;
    }
    let release = releases.get(release_name)?;
    let dir = dir.unwrap_or_else(|| default_dir(&workspace, release_name));
    let dir = std::path::absolute(&dir).with_context(|| format!("resolving {}", dir.display()))?;
    let made = RocmRoot { release: release_name.to_string(), dir };
    let spec = releases.spec(release_name, release);
    check_user_is_root()?;
    check_host_tools()?;
    match state(&made.dir, &spec) {
        RootState::Complete => {
            write_wrappers(&made, &workspace)?;
            println!("rocm-root {release_name}: reusing {} (complete, same pins)", made.root().display());
            return Ok(made);
        }
        RootState::Absent => {}
        RootState::Stale(why) => {
            println!("rocm-root {release_name}: {why}: making it again");
            remove_root(&made)?;
        }
    }
    let start = Instant::now();
    probe_mirror(&releases.mirror)?;
    make(&made, &releases, release, &workspace)?;
    write_atomically(&made.dir.join(COMPLETE_FILE), &spec)?;
    println!("rocm-root {release_name}: made in {:.0} s", start.elapsed().as_secs_f64());
    Ok(made)
}

/// What is at a root's directory.
#[derive(Debug, PartialEq, Eq)]
enum RootState {
    Absent,
    Complete,
    /// A root to remove first, and why.
    Stale(&'static str),
}

fn state(dir: &Path, spec: &str) -> RootState {
    match std::fs::read_to_string(dir.join(COMPLETE_FILE)) {
        Ok(done) if done == spec && dir.join("root").is_dir() => RootState::Complete,
        Ok(_) if !dir.join("root").is_dir() => RootState::Stale("its marker without the root (the root was removed)"),
        Ok(_) => RootState::Stale("its pins changed"),
        Err(_) if dir.join("root").exists() => RootState::Stale("a half-made root (interrupted: no `complete` marker)"),
        Err(_) => RootState::Absent,
    }
}

fn check_user_is_root() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let uid = effective_uid(&status).context("no Uid line in /proc/self/status")?;
    if uid != 0 {
        bail!("rocm-root must run as root (debootstrap, chroot and mount need it); running as uid {uid}");
    }
    Ok(())
}

/// The effective uid of a `/proc/PID/status` text (`Uid: real effective saved fs`).
fn effective_uid(status: &str) -> Option<u32> {
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn check_host_tools() -> Result<()> {
    for (tool, package) in [("debootstrap", "debootstrap"), ("unshare", "util-linux"), ("chroot", "coreutils"), ("mount", "mount")] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        if !found {
            bail!("rocm-root needs `{tool}` on the host: apt-get install -y {package}");
        }
    }
    Ok(())
}

/// One HTTP request for the base suite's Release file: a clear error when the mirror cannot be reached.
fn probe_mirror(mirror: &str) -> Result<()> {
    let rest = mirror.strip_prefix("http://").with_context(|| format!("mirror {mirror}: only http:// mirrors are supported (apt checks the signatures)"))?;
    let (host_port, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let addr = if host_port.contains(':') { host_port.to_string() } else { format!("{host_port}:80") };
    let unreachable = |why: String| anyhow::anyhow!("Debian mirror unreachable: {mirror} ({why})");
    let target = addr.to_socket_addrs().map_err(|e| unreachable(format!("resolving {addr}: {e}")))?.next().ok_or_else(|| unreachable(format!("{addr} has no address")))?;
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(15)).map_err(|e| unreachable(format!("connecting to {target}: {e}")))?;
    stream.set_read_timeout(Some(Duration::from_secs(15))).ok();
    let host = host_port.split(':').next().unwrap_or(host_port);
    let request = format!("HEAD /{path}/dists/sid/Release HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| unreachable(format!("sending a request: {e}")))?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).map_err(|e| unreachable(format!("reading the answer: {e}")))?;
    let status_line = String::from_utf8_lossy(&head[..n]).lines().next().unwrap_or("").to_string();
    if !status_line.contains(" 200") {
        return Err(unreachable(format!("dists/sid/Release answered `{status_line}`")));
    }
    Ok(())
}

fn remove_root(made: &RocmRoot) -> Result<()> {
    let root = made.root();
    // bind mounts live in in-root's private namespaces, but a hand-made mount would make remove_dir_all walk the host
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    if let Some(m) = mounts.lines().filter_map(|l| l.split_whitespace().nth(1)).find(|m| Path::new(m).starts_with(&root)) {
        bail!("{m} is mounted inside the root to remove: unmount it first");
    }
    let _ = std::fs::remove_file(made.dir.join(COMPLETE_FILE));
    if root.exists() {
        std::fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    }
    Ok(())
}

fn make(made: &RocmRoot, releases: &Releases, release: &Release, workspace: &Path) -> Result<()> {
    let root = made.root();
    std::fs::create_dir_all(&made.dir).with_context(|| format!("creating {}", made.dir.display()))?;
    println!("rocm-root {}: debootstrap {} into {}", made.release, releases.base_suite, root.display());
    host(Command::new("debootstrap").args(["--variant=minbase", &releases.base_suite]).arg(&root).arg(&releases.mirror), "debootstrap")?;

    let mut sources = format!("deb {} {} main\n", releases.mirror, releases.base_suite);
    if release.suite != releases.base_suite {
        sources.push_str(&format!("deb {} {} main\n", releases.mirror, release.suite));
        let pin = format!("Package: {}\nPin: release a={}\nPin-Priority: 990\n", releases.rocm_package_pattern, release.suite);
        write_atomically(&root.join("etc/apt/preferences.d/rocm-release"), &pin)?;
    }
    write_atomically(&root.join("etc/apt/sources.list"), &sources)?;
    // the mirror's Release files are past their Valid-Until
    write_atomically(&root.join("etc/apt/apt.conf.d/99no-valid-until"), "Acquire::Check-Valid-Until \"false\";\n")?;
    copy_host_certificates(&root)?;
    write_wrappers(made, workspace)?;

    in_root(made, &["apt-get", "update", "-q"], "apt-get update")?;
    let wanted: Vec<&String> = releases.build_tools.iter().chain(&release.packages).collect();
    check_pinned_versions(made, &wanted)?;
    let mut install = vec!["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", "--no-install-recommends"];
    install.extend(wanted.iter().map(|s| s.as_str()));
    in_root(made, &install, "apt-get install")?;
    // the downloaded .deb files (about 1 GB for 7.2) are not needed once installed
    in_root(made, &["apt-get", "clean"], "apt-get clean")?;
    in_root(made, &["update-ca-certificates"], "update-ca-certificates")?;

    let out = made.command("dpkg-query").args(["-W", "-f", "${Package}=${Version}\\n"]).output().context("running dpkg-query in the root")?;
    let pattern = releases.rocm_package_pattern.trim_matches('/');
    let is_rocm = |p: &str| pattern.split('|').any(|w| p.contains(w)) || ["clang", "llvm", "lld", "hipcc"].iter().any(|w| p.contains(w));
    let mut installed: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap_or("").lines().filter(|l| is_rocm(l.split('=').next().unwrap_or(""))).collect();
    installed.sort_unstable();
    write_atomically(&made.dir.join(PACKAGES_FILE), &format!("# ROCm {} root: ROCm and LLVM packages installed\n{}\n", made.release, installed.join("\n")))?;
    let unpinned: Vec<&&str> = installed.iter().filter(|p| !release.packages.iter().any(|pin| pin == **p)).collect();
    if !unpinned.is_empty() {
        bail!("apt installed ROCm/LLVM packages that {RELEASES_FILE} does not pin for {}: {} (pin them)", made.release, unpinned.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "));
    }
    Ok(())
}

/// Fails naming each pinned `package=version` the mirror does not have, with the versions it has.
fn check_pinned_versions(made: &RocmRoot, wanted: &[&String]) -> Result<()> {
    let pinned: Vec<(&str, &str)> = wanted.iter().filter_map(|p| p.split_once('=')).collect();
    let mut args = vec!["apt-cache", "madison"];
    args.extend(pinned.iter().map(|(p, _)| *p));
    let out = made.command(args[0]).args(&args[1..]).output().context("running apt-cache madison in the root")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut missing = Vec::new();
    for (package, version) in &pinned {
        let offered: Vec<&str> = text.lines().filter_map(|l| madison_row(l).filter(|(p, _)| p == package).map(|(_, v)| v)).collect();
        if !offered.contains(version) {
            let has = if offered.is_empty() { "none".to_string() } else { offered.join(", ") };
            missing.push(format!("{package}={version} (the mirror has: {has})"));
        }
    }
    if !missing.is_empty() {
        bail!("{RELEASES_FILE} pins versions the mirror no longer has: {}", missing.join("; "));
    }
    Ok(())
}

/// `hipcc | 7.2.4+dfsg-1~exp1 | http://… experimental/main amd64 Packages` → (package, version).
fn madison_row(line: &str) -> Option<(&str, &str)> {
    let mut cols = line.split('|').map(str::trim);
    Some((cols.next()?, cols.next()?))
}

/// The host's extra CA certificates (an HTTPS proxy's), for cargo inside the root.
fn copy_host_certificates(root: &Path) -> Result<()> {
    let from = Path::new("/usr/local/share/ca-certificates");
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    let to = root.join("usr/local/share/ca-certificates");
    std::fs::create_dir_all(&to).with_context(|| format!("creating {}", to.display()))?;
    for entry in entries.flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `bin/in-root`: `unshare -m` (a private mount namespace: nothing stays mounted),
/// bind mounts of the workspace, /tmp and the cargo home at their host paths and
/// /proc, then `chroot` with the current directory kept (or `/` when it is not
/// visible inside) and the host's ROCm variables (ROCM_PATH, HIP_PATH, …) unset:
/// they would point the root's hipcc at the host's files. `bin/hipcc` calls the
/// root's own hipcc through it.
fn write_wrappers(made: &RocmRoot, workspace: &Path) -> Result<()> {
    let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo"))).unwrap_or_default();
    let root = made.root();
    for visible in [workspace, Path::new("/tmp"), Path::new("/root/.cargo"), Path::new("/proc")] {
        let inside = root.join(visible.strip_prefix("/").unwrap_or(visible));
        std::fs::create_dir_all(&inside).with_context(|| format!("creating {}", inside.display()))?;
    }
    let in_root = format!(
        r#"#!/bin/sh
# Made by `cargo xtask rocm-root {release}`: runs a command inside the ROCm {release} root.
exec unshare -m sh -c '
r=$1; ws=$2; cargo_home=$3; cwd=$4; shift 4
mount --bind "$ws" "$r$ws" && mount --bind /tmp "$r/tmp" && mount -t proc proc "$r/proc" || exit 125
if [ -d "$cargo_home" ]; then mount --bind "$cargo_home" "$r/root/.cargo" || exit 125; fi
[ -d "$r$cwd" ] || cwd=/
exec chroot "$r" /usr/bin/env -u ROCM_PATH -u HIP_PATH -u HIP_CLANG_PATH -u HIP_DEVICE_LIB_PATH -C "$cwd" PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root CARGO_HOME=/root/.cargo HIP_PLATFORM=amd "$@"
' in-root {root} {workspace} {cargo_home} "$PWD" "$@"
"#,
        release = made.release,
        root = shell_quote(&root),
        workspace = shell_quote(workspace),
        cargo_home = shell_quote(&cargo_home),
    );
    let hipcc = format!("#!/bin/sh\n# Made by `cargo xtask rocm-root {}`: the root's hipcc.\nexec {} /usr/bin/hipcc \"$@\"\n", made.release, shell_quote(&made.in_root()));
    std::fs::create_dir_all(made.dir.join("bin")).with_context(|| format!("creating {}", made.dir.join("bin").display()))?;
    for (path, text) in [(made.in_root(), in_root), (made.hipcc(), hipcc)] {
        write_atomically(&path, &text)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

fn write_atomically(path: &Path, text: &str) -> Result<()> {
    crate::tree::write_file_atomic(path, text.as_bytes())
}

/// Runs a host command; an error names it and ends with its last output lines.
fn host(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("running {what}"))?;
    if !out.status.success() {
        bail!("{what} failed ({}): {}", out.status, last_lines(&out));
    }
    Ok(())
}

fn in_root(made: &RocmRoot, args: &[&str], what: &str) -> Result<()> {
    host(made.command(args[0]).args(&args[1..]), &format!("{what} in the ROCm {} root", made.release))
}

fn last_lines(out: &std::process::Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn releases() -> Releases {
        Releases::load(&workspace_root()).unwrap().0
    }

    #[test]
    fn the_pinned_releases_parse_and_pin_every_package_exactly() {
        let r = releases();
        assert!(r.release.contains_key("7.2") && r.release.contains_key("6.4"));
        for (name, rel) in &r.release {
            assert!(rel.packages.iter().all(|p| p.split_once('=').is_some_and(|(_, v)| !v.is_empty())), "{name}: a package without a version");
            assert!(rel.sonames.iter().any(|s| s.starts_with("libamdhip64.so.")), "{name}");
        }
    }

    #[test]
    fn an_unknown_release_names_the_known_ones() {
        let e = releases().get("7.1").unwrap_err().to_string();
        assert_eq!(e, "unknown ROCm release `7.1`: rocm-releases.toml pins 6.4, 7.2");
    }

    #[test]
    fn a_root_without_its_marker_is_half_made_and_other_pins_are_stale() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(state(dir.path(), "spec"), RootState::Absent);
        std::fs::create_dir(dir.path().join("root")).unwrap();
        assert!(matches!(state(dir.path(), "spec"), RootState::Stale(why) if why.contains("half-made")));
        std::fs::write(dir.path().join(COMPLETE_FILE), "spec").unwrap();
        assert_eq!(state(dir.path(), "spec"), RootState::Complete);
        assert!(matches!(state(dir.path(), "other"), RootState::Stale(why) if why.contains("pins changed")));
        std::fs::remove_dir(dir.path().join("root")).unwrap();
        assert!(matches!(state(dir.path(), "spec"), RootState::Stale(why) if why.contains("without the root")));
    }

    #[test]
    fn effective_uid_is_the_second_uid_field() {
        assert_eq!(effective_uid("Name:\tx\nUid:\t1000\t0\t0\t0\n"), Some(0));
        assert_eq!(effective_uid("Uid:\t0\t1000\t1000\t1000\n"), Some(1000));
        assert_eq!(effective_uid("Name:\tx\n"), None);
    }

    #[test]
    fn madison_rows_split_package_and_version() {
        assert_eq!(madison_row("     hipcc | 7.2.4+dfsg-1~exp1 | http://deb.debian.org/debian experimental/main amd64 Packages"), Some(("hipcc", "7.2.4+dfsg-1~exp1")));
        assert_eq!(madison_row(""), None);
    }

    /// Against the 7.2 root when it exists (tools/test.sh makes it before the tests): apt-cache
    /// inside it answers for the mirror, and a pin it lacks is named with the versions it has.
    #[test]
    fn a_pinned_version_the_mirror_lacks_is_named() {
        let made = RocmRoot { release: "7.2".into(), dir: default_dir(&workspace_root(), "7.2") };
        if state(&made.dir, &releases().spec("7.2", releases().get("7.2").unwrap())) != RootState::Complete {
            println!("skipped: no complete ROCm 7.2 root at {} (cargo xtask rocm-root 7.2)", made.dir.display());
            return;
        }
        let (good, bogus) = ("hipcc=7.2.4+dfsg-1~exp1".to_string(), "hipcc=0.0-gone".to_string());
        check_pinned_versions(&made, &[&good]).unwrap();
        let e = check_pinned_versions(&made, &[&good, &bogus]).unwrap_err().to_string();
        assert!(e.starts_with("rocm-releases.toml pins versions the mirror no longer has: hipcc=0.0-gone (the mirror has: "), "{e}");
        assert!(e.contains("7.2.4+dfsg-1~exp1"), "{e}");
    }

    #[test]
    fn an_unreachable_mirror_is_one_clear_error() {
        // port 9 (discard) on loopback: nothing listens
        let e = probe_mirror("http://127.0.0.1:9/debian").unwrap_err().to_string();
        assert!(e.starts_with("Debian mirror unreachable: http://127.0.0.1:9/debian (connecting to 127.0.0.1:9"), "{e}");
        assert!(probe_mirror("https://deb.debian.org/debian").unwrap_err().to_string().contains("only http://"));
    }
}
