import { useQuery } from "@tanstack/react-query";
import { api } from "../api";
import type { Answer } from "../api-types";
import { useSession } from "../session";
import { Address, Empty, ListState, Money, Table, When } from "../ui";

/** Admin console: reward claims the distributors paid that match no reward expecting one (docs/rewards.md). */
export function UnknownRewardClaims() {
  const { token } = useSession();
  const query = useQuery({
    queryKey: ["admin-reward-claims"],
    queryFn: () => api<Answer<"/api/admin/reward-claims">>("/api/admin/reward-claims?limit=200", { token }),
  });
  const rows = query.data?.data ?? [];
  return (
    <section aria-labelledby="h-reward-claims">
      <h1 id="h-reward-claims">Unknown reward claims</h1>
      <p className="hint">
        Claims seen on chain for no reward of the service, or for a reward that was not expecting one. Each was paid from the
        named funder: check the voucher key.
      </p>
      <ListState list={{ isLoading: query.isLoading, error: query.error }} what="reward claims" />
      <Table
        caption="Unknown reward claims, newest first"
        head={["Seen", "Reason", "Amount", "Funder", "Recipient", "Transaction"]}
      >
        {rows.length === 0 && <Empty colSpan={6}>None.</Empty>}
        {rows.map((row) => (
          <tr key={`${row.chainId}:${row.transactionHash}:${row.logIndex}`}>
            <td>
              <When value={row.seenAt} />
            </td>
            <td>
              {row.reason.replaceAll("_", " ")}
              {row.rewardId && <small> {row.rewardId}</small>}
            </td>
            <td>
              <Money value={row.amount} />
            </td>
            <td>
              <Address value={row.funder} />
            </td>
            <td>
              <Address value={row.recipient} />
            </td>
            <td>
              <Address value={row.transactionHash} />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
