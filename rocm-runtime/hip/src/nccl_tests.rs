//! Tests of the `nccl` module. The ones at the top need no GPU and no RCCL
//! (ids, error texts, the arguments refused before RCCL is called, the
//! unlinked build); the ones in `gpu` run a communicator of world size 1 on
//! device 0 (feature `rccl` only) and print "skipped: no ROCm device" when the
//! runtime reports none.
use crate::nccl::result::{check, ErrorContext};
use crate::nccl::sys::{self, ncclResult_t as R};
use crate::nccl::{Comm, Id, NcclError, NcclStatus, ReduceOp};
use crate::tests::{fake_slice, fake_stream};

#[test]
fn ids_round_trip_and_bad_lengths_are_refused() {
    let bytes: Vec<u8> = (0..128u8).map(|b| b.wrapping_mul(7)).collect();
    let id = Id::from_bytes(&bytes).unwrap();
    let back: Vec<u8> = id.internal().iter().map(|&c| c as u8).collect();
    assert_eq!(back, bytes);
    assert_eq!(Id::uninit(*id.internal()).internal(), id.internal());
    for len in [0, 57, 127, 129] {
        let e = Id::from_bytes(&vec![1u8; len]).unwrap_err();
        assert_eq!(e.0, R::ncclInvalidArgument);
        assert_eq!(e.to_string().rsplit(": ").next().unwrap(), format!("an RCCL unique id is 128 bytes, got {len}"));
        assert!(e.to_string().starts_with("RCCL error in Id::from_bytes: ncclInvalidArgument (4)"), "{e}");
    }
}

#[test]
fn statuses_become_errors_with_their_call_and_name() {
    assert_eq!(check("ncclGroupEnd", R::ncclSuccess, std::ptr::null_mut()), Ok(NcclStatus::Success));
    assert_eq!(check("ncclGroupEnd", R::ncclInProgress, std::ptr::null_mut()), Ok(NcclStatus::InProgress));
    let names = [
        "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
        "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
    ];
    for (value, name) in names.iter().enumerate() {
        assert_eq!(R(value as u32).name(), Some(*name));
        assert_eq!(format!("{:?}", R(value as u32)), *name);
    }
    assert_eq!(R::ncclNumResults.name(), None);
    assert_eq!(format!("{:?}", R(42)), "ncclResult_t(42)");
    let e = NcclError::refused("ncclAllReduce", R(42), "");
    assert_eq!(e.name(), "ncclResult_t(42)");
    assert!(e.to_string().starts_with("RCCL error in ncclAllReduce: ncclResult_t(42) (42)"), "{e}");
    let e = NcclError(R::ncclRemoteError, ErrorContext { call: "ncclRecv", detail: "peer 1 is gone".into() });
    assert_eq!(format!("{e:?}"), "NcclError(ncclRecv: ncclRemoteError (6))");
    let shown = e.to_string();
    assert!(shown.starts_with("RCCL error in ncclRecv: ncclRemoteError (6)") && shown.ends_with(": peer 1 is gone"), "{shown}");
    assert_eq!(e.status(), e.0);
}

/// The arguments `Comm::from_rank` refuses before asking HIP or RCCL anything.
#[test]
fn from_rank_refuses_ranks_outside_the_world() {
    let id = Id::uninit([0; 128]);
    let cases = [
        (1, 1, "rank 1 is not below the world size 1"),
        (5, 2, "rank 5 is not below the world size 2"),
        (0, 0, "world size 0 is not in 1..=2147483647"),
        (0, 1 << 31, "world size 2147483648 is not in 1..=2147483647"),
    ];
    for (rank, world, why) in cases {
        let e = Comm::from_rank(fake_stream(), rank, world, id).unwrap_err();
        assert_eq!((e.0, e.1.call, e.1.detail.as_str()), (R::ncclInvalidArgument, "Comm::from_rank", why));
    }
}

/// Buffers too short for the count RCCL would read or write are refused before
/// the call (RCCL would run past them). The communicator is null: it is never
/// handed to RCCL, and dropping it does nothing.
#[test]
fn collectives_refuse_short_buffers() {
    let stream = fake_stream();
    let comm = Comm { comm: std::ptr::null_mut(), stream: stream.clone(), rank: 1, world_size: 4 };
    let (s8, mut r8) = (fake_slice::<f32>(8, &stream), fake_slice::<f32>(8, &stream));
    let (s2, mut r2) = (fake_slice::<f32>(2, &stream), fake_slice::<f32>(2, &stream));
    let sum = &ReduceOp::Sum;
    let refused = |r: Result<NcclStatus, NcclError>| {
        let e = r.unwrap_err();
        assert_eq!(e.0, R::ncclInvalidArgument, "{e}");
        format!("{}: {}", e.1.call, e.1.detail)
    };
    assert_eq!(refused(comm.all_reduce(&s8, &mut r2, sum)), "Comm::all_reduce: the receive buffer holds 2 elements, the call needs 8");
    assert_eq!(refused(comm.all_gather(&s8, &mut r8)), "Comm::all_gather: the receive buffer holds 8 elements, the call needs 32");
    assert_eq!(refused(comm.reduce_scatter(&s8, &mut r8, sum)), "Comm::reduce_scatter: the send buffer holds 8 elements, the call needs 32");
    assert_eq!(refused(comm.broadcast(Some(&s2), &mut r8, 0)), "Comm::broadcast: the send buffer holds 2 elements, the call needs 8");
    assert_eq!(refused(comm.broadcast::<_, _, f32>(None::<&crate::driver::HipSlice<f32>>, &mut r8, 1)), "Comm::broadcast: rank 1 is the root: it needs a send buffer");
    assert_eq!(refused(comm.reduce(&s8, Some(&mut r2), sum, 0)), "Comm::reduce: the receive buffer holds 2 elements, the call needs 8");
    assert_eq!(refused(comm.reduce::<_, crate::driver::HipSlice<f32>, f32>(&s8, None, sum, 1)), "Comm::reduce: rank 1 is the root: it needs a receive buffer");
    assert_eq!((comm.rank(), comm.world_size()), (1, 4));
}

#[cfg(not(candle_rocm_rccl))]
#[test]
fn unlinked_rccl_says_which_feature_links_it() {
    use crate::nccl::result::NCCL_NOT_LINKED;
    let e = Id::new().unwrap_err();
    assert_eq!((e.0, e.1.call), (NCCL_NOT_LINKED, "ncclGetUniqueId"));
    assert_eq!(
        e.to_string(),
        "RCCL error in ncclGetUniqueId: rccl_library_not_linked (4294901763): candle-rocm-hip was built without its feature `rccl`, so RCCL is not linked"
    );
    assert_eq!(crate::nccl::group_start().unwrap_err().0, NCCL_NOT_LINKED);
    assert_eq!(crate::nccl::result::get_version().unwrap_err().1.call, "ncclGetVersion");
}

#[test]
fn the_unique_id_is_128_bytes() {
    assert_eq!(std::mem::size_of::<sys::ncclUniqueId>(), 128);
    assert_eq!(std::mem::size_of::<sys::ncclResult_t>(), 4);
    assert_eq!(std::mem::size_of::<sys::ncclDataType_t>(), 4);
}

#[cfg(candle_rocm_rccl)]
mod gpu {
    use super::*;
    use crate::driver::sys::hip;
    use crate::driver::{DevicePtr, DevicePtrMut, HipContext, HipStream};
    use half::{bf16, f16};
    use std::sync::Arc;

    /// Device 0, or `None` (after saying so) when the runtime reports no device.
    fn device() -> Option<Arc<HipContext>> {
        match HipContext::new(0) {
            Ok(ctx) => Some(ctx),
            Err(e) if e.0 == hip::hipError_t_hipErrorNoDevice => {
                println!("skipped: no ROCm device ({e})");
                None
            }
            Err(e) => panic!("HIP runtime failed: {e}"),
        }
    }

    /// A stream on device 0 and a communicator of world size 1 on it, or `None`
    /// (after saying so) when the runtime reports no device.
    fn world_of_one() -> Option<(Arc<HipStream>, Comm)> {
        let ctx = device()?;
        let stream = ctx.new_stream().unwrap();
        let id = Id::new().unwrap_or_else(|e| panic!("{e}"));
        let comm = Comm::from_rank(stream.clone(), 0, 1, id).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((comm.rank(), comm.world_size(), comm.ordinal()), (0, 1, 0));
        Some((stream, comm))
    }

    #[test]
    fn version_is_reported() {
        if device().is_none() {
            return;
        }
        let v = crate::nccl::result::get_version().unwrap_or_else(|e| panic!("{e}"));
        println!("RCCL/NCCL version code {v}");
        assert!(v >= 2_00_00, "{v}");
    }

    #[test]
    fn all_reduce_f32_bf16_f16() {
        let Some((stream, comm)) = world_of_one() else { return };
        let host: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5 - 100.0).collect();
        let send = stream.clone_htod(&host).unwrap();
        let mut recv = stream.alloc_zeros::<f32>(host.len()).unwrap();
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod, ReduceOp::Avg] {
            stream.memset_zeros(&mut recv).unwrap();
            comm.all_reduce(&send, &mut recv, &op).unwrap_or_else(|e| panic!("{op:?}: {e}"));
            assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "{op:?}");
        }
        let halves: Vec<bf16> = host.iter().map(|&x| bf16::from_f32(x)).collect();
        let send = stream.clone_htod(&halves).unwrap();
        let mut recv = stream.alloc_zeros::<bf16>(halves.len()).unwrap();
        comm.all_reduce(&send, &mut recv, &ReduceOp::Sum).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), halves);
        let halves: Vec<f16> = host.iter().map(|&x| f16::from_f32(x)).collect();
        let mut buf = stream.clone_htod(&halves).unwrap();
        comm.all_reduce_in_place(&mut buf, &ReduceOp::Sum).unwrap();
        assert_eq!(stream.clone_dtoh(&buf).unwrap(), halves);
        // a view of part of a buffer: only that part is written
        let mut recv = stream.alloc_zeros::<f16>(halves.len()).unwrap();
        comm.all_reduce(&buf.slice(10..20), &mut recv.slice_mut(100..110), &ReduceOp::Sum).unwrap();
        let back = stream.clone_dtoh(&recv).unwrap();
        assert_eq!(&back[100..110], &halves[10..20]);
        assert!(back[..100].iter().chain(&back[110..]).all(|x| *x == f16::ZERO));
        comm.async_error().unwrap();
    }

    #[test]
    fn broadcast_gather_scatter_reduce() {
        let Some((stream, comm)) = world_of_one() else { return };
        let host: Vec<i32> = (0..257).map(|i| i * 3 - 7).collect();
        let send = stream.clone_htod(&host).unwrap();
        let mut recv = stream.alloc_zeros::<i32>(host.len()).unwrap();
        comm.broadcast(Some(&send), &mut recv, 0).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "broadcast");
        let mut buf = stream.clone_htod(&host).unwrap();
        comm.broadcast_in_place(&mut buf, 0).unwrap();
        assert_eq!(stream.clone_dtoh(&buf).unwrap(), host, "broadcast_in_place");
        stream.memset_zeros(&mut recv).unwrap();
        comm.all_gather(&send, &mut recv).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "all_gather");
        stream.memset_zeros(&mut recv).unwrap();
        comm.reduce_scatter(&send, &mut recv, &ReduceOp::Sum).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "reduce_scatter");
        stream.memset_zeros(&mut recv).unwrap();
        comm.reduce(&send, Some(&mut recv), &ReduceOp::Max, 0).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "reduce");
        let wide: Vec<f64> = vec![0.25; 64];
        let send = stream.clone_htod(&wide).unwrap();
        let mut recv = stream.alloc_zeros::<f64>(64).unwrap();
        comm.all_gather(&send, &mut recv).unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), wide, "all_gather f64");
    }

    /// A rank sending to itself needs a group (send and recv issued together),
    /// and several collectives in one group run as one.
    #[test]
    fn group_calls() {
        let Some((stream, comm)) = world_of_one() else { return };
        let host: Vec<u8> = (0..=255).collect();
        let send = stream.clone_htod(&host).unwrap();
        let mut recv = stream.alloc_zeros::<u8>(host.len()).unwrap();
        crate::nccl::group_start().unwrap();
        comm.send(&send, 0).unwrap();
        comm.recv(&mut recv, 0).unwrap();
        crate::nccl::group_end().unwrap();
        assert_eq!(stream.clone_dtoh(&recv).unwrap(), host, "send/recv to self");
        let longs: Vec<i64> = (0..100).map(|i| i << 40).collect();
        let (a, b) = (stream.clone_htod(&longs).unwrap(), stream.clone_htod(&[7u64; 10]).unwrap());
        let (mut ra, mut rb) = (stream.alloc_zeros::<i64>(100).unwrap(), stream.alloc_zeros::<u64>(10).unwrap());
        crate::nccl::group_start().unwrap();
        comm.all_reduce(&a, &mut ra, &ReduceOp::Sum).unwrap();
        comm.all_reduce(&b, &mut rb, &ReduceOp::Max).unwrap();
        crate::nccl::group_end().unwrap();
        assert_eq!(stream.clone_dtoh(&ra).unwrap(), longs);
        assert_eq!(stream.clone_dtoh(&rb).unwrap(), vec![7u64; 10]);
        // an unmatched group end is RCCL's usage error
        let e = crate::nccl::group_end().unwrap_err();
        println!("unmatched group end: {e}");
        assert_eq!((e.0, e.1.call), (R::ncclInvalidUsage, "ncclGroupEnd"));
    }

    /// What RCCL itself refuses comes back as an error naming the call and
    /// status, with RCCL's own message where it gives one; the communicator
    /// is then aborted (whether RCCL keeps a refused call's group state is not
    /// what this tests).
    #[test]
    fn rccl_errors_are_clear() {
        let Some((stream, comm)) = world_of_one() else { return };
        let send = stream.clone_htod(&[1f32; 16]).unwrap();
        let mut recv = stream.alloc_zeros::<f32>(16).unwrap();
        let e = comm.broadcast(Some(&send), &mut recv, 3).unwrap_err();
        println!("root 3 of 1: {e}");
        assert_eq!((e.0, e.1.call), (R::ncclInvalidArgument, "ncclBroadcast"));
        let e = comm.send(&send, 5).unwrap_err();
        println!("peer 5 of 1: {e}");
        assert_eq!((e.0, e.1.call), (R::ncclInvalidArgument, "ncclSend"));
        // a null communicator, through the C API (the safe API never has one)
        let status = unsafe {
            sys::ncclAllReduce(send.device_ptr(&stream).0 as *const _, recv.device_ptr_mut(&stream).0 as *mut _, 16,
                sys::ncclDataType_t::ncclFloat32, sys::ncclRedOp_t::ncclSum, std::ptr::null_mut(), stream.cu_stream())
        };
        let e = check("ncclAllReduce", status, std::ptr::null_mut()).unwrap_err();
        println!("null communicator: {e}");
        assert_eq!(e.0, R::ncclInvalidArgument);
        comm.abort().unwrap();
    }
}
