//! A Hugging Face hub cache laid out by hand, for the examples that read their files only
//! through the hub client (`bert`, `llama`): with HF_HOME=DIR, candle_examples::hub::Repo::get asks
//! hf-hub 1.0.0 for the file with `local_files_only(true)` first, which reads
//! DIR/hub/models--ORG--NAME/refs/REVISION (a commit hash) and returns
//! DIR/hub/models--ORG--NAME/snapshots/HASH/FILE when it exists, without any network
//! request (hf-hub 1.0.0, repository/download.rs: resolve_from_cache_only).

use anyhow::Result;
use std::path::{Path, PathBuf};

/// A fixed, made-up commit hash (40 hex digits, as hf-hub's is_commit_hash wants).
pub const COMMIT: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";

/// Creates the repository's snapshot folder for revision `main`; returns the folder the
/// files go into.
pub fn snapshot_dir(hf_home: &Path, repo_id: &str) -> Result<PathBuf> {
    let repo = hf_home.join("hub").join(format!("models--{}", repo_id.replace('/', "--")));
    std::fs::create_dir_all(repo.join("refs"))?;
    std::fs::write(repo.join("refs").join("main"), COMMIT)?;
    let snap = repo.join("snapshots").join(COMMIT);
    std::fs::create_dir_all(&snap)?;
    Ok(snap)
}
