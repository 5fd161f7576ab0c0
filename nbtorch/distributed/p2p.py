"""Point-to-point messages: send/recv (blocking, with the group's timeout), isend/irecv
(Work handles), and batch_isend_irecv. Peers are global ranks (or `group_dst`/`group_src`);
`tag` tells apart messages between the same two ranks."""
from ._buffers import check_tensor, data_buffer
from .collectives import root_of
from .process_group import resolve
from .work import Work

__all__ = ["send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv"]


def _peer(pg, rank, group_rank, what):
    peer = root_of(pg, rank, group_rank, what)
    if peer == pg.rank():
        word = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {word} rank: should not be the same as rank of the current "
                         "process.")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending `tensor` to rank `dst`; returns a Work (None outside `group`).
    Do not change `tensor` before `wait()`."""
    check_tensor(tensor)
    pg = resolve(group)
    if not pg.is_member:
        return None
    if dst is None and group_dst is None:
        raise ValueError("send/isend need a destination rank (dst or group_dst)")
    peer = _peer(pg, dst, group_dst, "dst")
    pg.check_usable()
    st = data_buffer(tensor, pg.MPI)
    return Work([pg.comm.Isend(st.array, peer, tag)], pg, f"send to rank {pg.ranks[peer]}",
                keep=st)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns a Work."""
    check_tensor(tensor)
    pg = resolve(group)
    if not pg.is_member:
        return None
    MPI = pg.MPI
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src,
                                                                           "src")
    pg.check_usable()
    st = data_buffer(tensor, MPI)
    status = MPI.Status()
    where = "any rank" if peer == MPI.ANY_SOURCE else f"rank {pg.ranks[peer]}"
    return Work([pg.comm.Irecv(st.array, peer, tag)], pg, f"recv from {where}",
                st.write_back, [tensor], st, status)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst`; returns when it left (raises after the timeout)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from `src` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._source_rank()


class P2POp:
    """One send or receive for `batch_isend_irecv`: P2POp(dist.isend, tensor, peer)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed"
                             ".isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every P2POp of the list; returns their Work handles."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works
