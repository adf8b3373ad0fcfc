# mutant: stores received piece c at the mirrored offset (pieces[S - 1 - c]): the pieces are not reassembled in order
# cell: ring_broadcast
# replace: ops.append(dist.P2POp(dist.irecv, pieces[c], left))
# with: ops.append(dist.P2POp(dist.irecv, pieces[chunks - 1 - c], left))
