//! The loopback of a new network namespace, brought up.
//!
//! A new network namespace has one interface, `lo`, down. Bringing it up
//! is one `RTM_NEWLINK` message over a route netlink socket, written here
//! in its 32 bytes rather than by running `ip` (one exec less per call) or
//! pulling in an async netlink stack for one message. The kernel then
//! gives `lo` 127.0.0.1/8 and ::1 itself.

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, netlink::SocketAddrNetlink};

use super::{LaunchError, Step, failed};

/// `RTM_NEWLINK`, `NLM_F_REQUEST | NLM_F_ACK`, `NLMSG_ERROR`, `IFF_UP`
/// (rtnetlink(7), netlink(7), netdevice(7)).
const RTM_NEWLINK: u16 = 16;
const NLM_F_REQUEST_ACK: u16 = 0x1 | 0x4;
const NLMSG_ERROR: u16 = 2;
const IFF_UP: u32 = 1;
/// The loopback's index in every network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// Sets `lo` up.
pub(super) fn loopback_up() -> Result<(), LaunchError> {
    // NETLINK_ROUTE is protocol 0: the default.
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)
        .map_err(failed(Step::Loopback))?;
    let mut message = Vec::with_capacity(32);
    // struct nlmsghdr: length, type, flags, sequence, port id.
    message.extend_from_slice(&32u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, padding, type, index, flags, change mask.
    message.extend_from_slice(&[0u8, 0u8]);
    message.extend_from_slice(&0u16.to_ne_bytes());
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    rustix::net::sendto(
        &socket,
        &message,
        SendFlags::empty(),
        &SocketAddrNetlink::new(0, 0),
    )
    .map_err(failed(Step::Loopback))?;
    let mut answer = [0u8; 64];
    let (got, _) = rustix::net::recv(&socket, &mut answer[..], RecvFlags::empty())
        .map_err(failed(Step::Loopback))?;
    let got = &answer[..got];
    // The acknowledgement: a header of type NLMSG_ERROR, then an errno
    // (0 for success, negative otherwise).
    if got.len() < 20 || u16::from_ne_bytes([got[4], got[5]]) != NLMSG_ERROR {
        return Err(LaunchError::new(Step::Loopback)
            .because("the kernel's answer was not an acknowledgement"));
    }
    let errno = i32::from_ne_bytes([got[16], got[17], got[18], got[19]]);
    if errno != 0 {
        // Through `io::Error`, which takes any number: rustix's `Errno`
        // asserts the range, and the kernel's answer is not ours to trust
        // that far.
        let error = std::io::Error::from_raw_os_error(errno.saturating_neg());
        return Err(failed(Step::Loopback)(error));
    }
    Ok(())
}
