//! The ROCm releases users run, here: `root` provisions a pinned release in a Debian
//! sid root of its own (`cargo xtask rocm-root`), `backend` builds, links and tests the
//! generated packages inside it (`cargo xtask rocm-backend`), and `abi` checks a binary's
//! imports against that release's libraries.

pub mod abi;
pub mod backend;
pub mod root;
