//! The RCCL ↔ NCCL tables, and the RCCL entry points' error paths without
//! NCCL or a GPU: every call returns a status (never panics, never crashes)
//! and `ncclGetLastError` says why.
use crate::nccl::*;
use cudarc::nccl::sys::ncclResult_t as N;
use std::ffi::{c_int, CStr};
use std::ptr::{null, null_mut};

/// `rccl/rccl.h` of the ROCm 7.2 root (`cargo xtask rocm-root 7.2`), if made.
fn rccl_header() -> Option<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/rocm/7.2/root");
    std::fs::read_to_string(root.join("usr/include/rccl/rccl.h")).ok()
}

/// The value `name = N` gives an enumerator in a C header.
fn enum_value(header: &str, name: &str) -> Option<u32> {
    header.match_indices(name).find_map(|(at, _)| {
        let before = header[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest = header[at + name.len()..].trim_start().strip_prefix('=')?.trim_start();
        rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().ok()
    })
}

#[test]
fn enum_values_are_read_from_a_header() {
    let h = "typedef enum { ncclInt8 = 0, ncclChar = 0,\n ncclUint8      = 1, xncclFloat = 5, ncclFloat = 7 } t;";
    assert_eq!(enum_value(h, "ncclUint8"), Some(1));
    assert_eq!(enum_value(h, "ncclFloat"), Some(7));
    assert_eq!(enum_value(h, "ncclBfloat16"), None);
}

/// RCCL's side of every table against ROCm 7.2's `rccl.h`.
#[test]
fn rccl_values_equal_rocm_7_2s_header() {
    let Some(header) = rccl_header() else {
        println!("skipped: no ROCm 7.2 root with rccl.h (cargo xtask rocm-root 7.2): RCCL's values not checked against its header");
        return;
    };
    let names = RCCL_RESULTS.iter().map(|&(v, name, _)| (v, name.trim_end_matches('\0')));
    let rows = names.chain(DATATYPES.iter().map(|&(v, n, _)| (v, n))).chain(REDUCE_OPS.iter().map(|&(v, n, _)| (v, n)));
    let mut checked = 0;
    for (ours, name) in rows {
        assert_eq!(enum_value(&header, name), Some(ours), "{name} is {ours} here, not in rccl.h");
        checked += 1;
    }
    assert_eq!(enum_value(&header, "NCCL_UNIQUE_ID_BYTES 128"), None); // a #define, not an enumerator
    assert!(header.contains("#define NCCL_UNIQUE_ID_BYTES 128"));
    assert_eq!(std::mem::size_of::<ncclUniqueId>(), 128);
    println!("{checked} RCCL values equal ROCm 7.2's rccl.h");
}

/// Each RCCL value maps to NCCL's enumerator of the same name; NCCL's
/// `ncclTimeout` (no RCCL counterpart) and unknown statuses are spelled out.
#[test]
fn tables_pair_same_named_values() {
    for &(_, name, nccl) in DATATYPES {
        assert_eq!(format!("{nccl:?}"), name);
    }
    for &(_, name, nccl) in REDUCE_OPS {
        assert_eq!(format!("{nccl:?}"), name);
    }
    for &(nccl, rccl) in NCCL_TO_RCCL {
        let rccl_name = RCCL_RESULTS.iter().find(|r| r.0 == rccl).map(|r| r.1.trim_end_matches('\0')).unwrap();
        if nccl == N::ncclTimeout {
            assert_eq!(rccl, ncclRemoteError);
        } else {
            assert_eq!(format!("{nccl:?}"), rccl_name);
        }
        assert_eq!(rccl_from_nccl(nccl as u32), rccl);
    }
    assert_eq!(rccl_from_nccl(N::ncclNumResults as u32), ncclInternalError);
    assert_eq!(rccl_from_nccl(99), ncclInternalError);
    // every RCCL status, in order, once
    let values: Vec<u32> = RCCL_RESULTS.iter().map(|r| r.0).collect();
    assert_eq!(values, (0..8).collect::<Vec<_>>());
    let mut values: Vec<u32> = DATATYPES.iter().map(|d| d.0).collect();
    values.dedup();
    assert_eq!(values, (0..12).collect::<Vec<_>>());
}

#[test]
fn error_strings() {
    unsafe {
        for &(status, name, text) in RCCL_RESULTS {
            assert!(name.ends_with('\0') && text.ends_with('\0'));
            let shown = CStr::from_ptr(ncclGetErrorString(status)).to_str().unwrap();
            assert_eq!(shown, text.trim_end_matches('\0'));
        }
        assert_eq!(CStr::from_ptr(ncclGetErrorString(99)).to_str().unwrap(), "unknown result code");
    }
}

#[test]
fn nccl_is_looked_for_by_its_soname_then_the_explicit_path_first() {
    assert_eq!(candidates(None), ["libnccl.so.2", "libnccl.so"]);
    assert_eq!(candidates(Some(String::new())), ["libnccl.so.2", "libnccl.so"]);
    assert_eq!(candidates(Some("/x/libnccl.so.2".into())), ["/x/libnccl.so.2", "libnccl.so.2", "libnccl.so"]);
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(ncclGetLastError(null_mut())) }.to_string_lossy().into_owned()
}

/// What is refused before NCCL is needed: null out-pointers, element types
/// and reductions NCCL lacks; each with its reason in `ncclGetLastError`.
#[test]
fn arguments_are_checked_before_nccl_is_needed() {
    unsafe {
        assert_eq!(ncclGetUniqueId(null_mut()), ncclInvalidArgument);
        assert_eq!(last_error(), "hip-on-cuda: the unique id out-pointer is a null pointer");
        assert_eq!(ncclGetVersion(null_mut()), ncclInvalidArgument);
        let id = ncclUniqueId { internal: [0; 128] };
        assert_eq!(ncclCommInitRank(null_mut(), 1, id, 0), ncclInvalidArgument);
        assert_eq!(last_error(), "hip-on-cuda: the communicator out-pointer is a null pointer");
        assert_eq!(ncclCommGetAsyncError(null_mut(), null_mut()), ncclInvalidArgument);
        let s = null_mut();
        assert_eq!(ncclAllReduce(null(), null_mut(), 4, 12, 0, null_mut(), s), ncclInvalidArgument);
        assert_eq!(last_error(), "hip-on-cuda: RCCL data type 12 has no NCCL counterpart");
        assert_eq!(ncclReduceScatter(null(), null_mut(), 4, 7, 5, null_mut(), s), ncclInvalidArgument);
        assert_eq!(last_error(), "hip-on-cuda: reduction 5 is not a built-in one");
        assert_eq!(ncclSend(null(), 4, 99, 0, null_mut(), s), ncclInvalidArgument);
        assert_eq!(ncclRecv(null_mut(), 4, u32::MAX, 0, null_mut(), s), ncclInvalidArgument);
        assert_eq!(ncclBroadcast(null(), null_mut(), 4, 13, 0, null_mut(), s), ncclInvalidArgument);
        assert_eq!(ncclAllGather(null(), null_mut(), 4, 13, null_mut(), s), ncclInvalidArgument);
        assert_eq!(ncclReduce(null(), null_mut(), 4, 7, 77, 0, null_mut(), s), ncclInvalidArgument);
    }
}

/// Without NCCL every call that needs it is `ncclSystemError` and says what
/// was tried; with NCCL (a GPU machine), collectives on a null communicator
/// are NCCL's own `ncclInvalidArgument` (destroying or aborting a null one is
/// NCCL's success: not asked there).
#[test]
fn without_nccl_every_call_fails_cleanly() {
    let loaded = library().is_ok();
    let expected = if loaded { ncclInvalidArgument } else { ncclSystemError };
    let s = null_mut();
    let statuses: Vec<(&str, ncclResult_t)> = unsafe {
        let mut comm = null_mut();
        let mut async_error = 0;
        let id = ncclUniqueId { internal: [0; 128] };
        let rows = vec![
            ("ncclCommGetAsyncError", ncclCommGetAsyncError(null_mut(), &mut async_error)),
            ("ncclAllReduce", ncclAllReduce(null(), null_mut(), 4, 7, 0, null_mut(), s)),
            ("ncclBroadcast", ncclBroadcast(null(), null_mut(), 4, 7, 0, null_mut(), s)),
            ("ncclReduce", ncclReduce(null(), null_mut(), 4, 7, 0, 0, null_mut(), s)),
            ("ncclAllGather", ncclAllGather(null(), null_mut(), 4, 7, null_mut(), s)),
            ("ncclReduceScatter", ncclReduceScatter(null(), null_mut(), 4, 7, 0, null_mut(), s)),
            ("ncclSend", ncclSend(null(), 4, 7, 0, null_mut(), s)),
            ("ncclRecv", ncclRecv(null_mut(), 4, 7, 0, null_mut(), s)),
        ];
        if !loaded {
            let mut version: c_int = 0;
            let mut id_out = id;
            let more = [
                ("ncclCommDestroy", ncclCommDestroy(null_mut())),
                ("ncclCommAbort", ncclCommAbort(null_mut())),
                ("ncclGetVersion", ncclGetVersion(&mut version)),
                ("ncclGetUniqueId", ncclGetUniqueId(&mut id_out)),
                ("ncclCommInitRank", ncclCommInitRank(&mut comm, 1, id, 0)),
                ("ncclGroupStart", ncclGroupStart()),
                ("ncclGroupEnd", ncclGroupEnd()),
            ];
            assert!(last_error().starts_with("hip-on-cuda: cannot load NCCL (tried libnccl.so.2: "), "{}", last_error());
            assert!(last_error().contains("site-packages/nvidia/nccl/lib"), "{}", last_error());
            rows.into_iter().chain(more).collect()
        } else {
            println!("NCCL loaded here: the calls on a null communicator are NCCL's to refuse");
            rows
        }
    };
    for (call, status) in statuses {
        assert_eq!(status, expected, "{call}");
    }
}
