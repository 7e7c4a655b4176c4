import type { ReactNode } from "react";
import { Link, usePath } from "../router";
import { AdminScreens, adminNav } from "../screens/admin";
import { InvestorScreens, investorNav } from "../screens/investor";
import { IssuerScreens, issuerNav } from "../screens/issuer";
import { PartnerScreens, partnerNav } from "../screens/partner";
import { useSession } from "../session";
import { SignIn } from "../sign-in";
import { Address } from "../ui";

const NAVS = { partner: partnerNav, investor: investorNav, issuer: issuerNav, admin: adminNav };
const ROLE_NAMES = { partner: "Partner", investor: "Investor", issuer: "Issuer", admin: "Administrator" };

export function App() {
  const { session, signOut } = useSession();
  const path = usePath();
  if (session === null) {
    return (
      <Shell>
        <SignIn />
      </Shell>
    );
  }
  const [, role, ...rest] = path.split("/");
  if (role !== session.role) {
    window.history.replaceState(null, "", `/console/${session.role}`);
  }
  const sub = role === session.role ? rest : [];
  const nav = NAVS[session.role];
  const active = `/${session.role}/${sub[0] ?? nav[0]?.path ?? ""}`;
  const screens = {
    partner: <PartnerScreens sub={sub} />,
    investor: <InvestorScreens sub={sub} />,
    issuer: <IssuerScreens sub={sub} />,
    admin: <AdminScreens sub={sub} />,
  };
  return (
    <Shell
      header={
        <div className="who">
          <span>
            {ROLE_NAMES[session.role]} · <Address value={session.address} />
          </span>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      }
    >
      <nav aria-label={`${ROLE_NAMES[session.role]} screens`}>
        <ul>
          {nav.map((item) => {
            const to = `/${session.role}/${item.path}`;
            return (
              <li key={item.path}>
                <Link to={to} aria-current={active === to ? "page" : undefined}>
                  {item.label}
                </Link>
              </li>
            );
          })}
        </ul>
      </nav>
      <main id="main">{screens[session.role]}</main>
    </Shell>
  );
}

function Shell({ header, children }: { header?: ReactNode; children: ReactNode }) {
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">USDC settlement · Console</span>
        {header}
      </header>
      <div className="body">{children}</div>
    </>
  );
}
