// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/// @notice Recurring payments from any wallet: the subscriber signs the terms once (EIP-712; ECDSA or
/// ERC-1271), and anyone may then pull exactly `amount` from the subscriber straight to the payee once per
/// period while the terms run. The subscriber's own approval (or EIP-2612 permit) is what moves the money:
/// the manager never holds tokens, has no owner and no key of the service, so nobody can charge more,
/// sooner, or to anyone else than the subscriber signed. The subscriber or the payee can stop it at any time.
contract SubscriptionManager is EIP712 {
    using SafeERC20 for IERC20;

    struct Subscription {
        address subscriber;
        address payee;
        address token;
        uint256 amount;
        uint48 period;
        uint48 start;
        uint48 end;
        uint256 salt;
    }

    /// @dev Packed in four slots; `nextPeriod` is one past the last charged period index, which is enough
    /// for "at most once per period" because the period index only grows with the block time.
    struct Registration {
        address subscriber;
        uint48 period;
        uint48 start;
        address payee;
        uint48 end;
        uint48 nextPeriod;
        address token;
        bool registered;
        bool cancelled;
        uint256 amount;
    }

    bytes32 public constant SUBSCRIPTION_TYPEHASH = keccak256(
        "Subscription(address subscriber,address payee,address token,uint256 amount,uint48 period,uint48 start,uint48 end,uint256 salt)"
    );
    bytes32 public constant CANCEL_TYPEHASH = keccak256("Cancel(bytes32 id)");

    mapping(bytes32 id => Registration) private _registrations;

    event Subscribed(
        bytes32 indexed id,
        address indexed subscriber,
        address indexed payee,
        address token,
        uint256 amount,
        uint48 period,
        uint48 start,
        uint48 end
    );
    event Charged(bytes32 indexed id, uint256 periodIndex, uint256 amount);
    event Cancelled(bytes32 indexed id, address by);

    error ZeroAmount();
    error ZeroPeriod();
    error ZeroPayee();
    error EndNotAfterStart();
    error TermsEnded(bytes32 id);
    error InvalidSignature();
    error AlreadySubscribed(bytes32 id);
    error PermitNotApplied(bytes32 id);
    error UnknownSubscription(bytes32 id);
    error SubscriptionCancelled(bytes32 id);
    error NotStarted(bytes32 id);
    error SubscriptionEnded(bytes32 id);
    error AlreadyCharged(bytes32 id, uint256 periodIndex);
    error NotSubscriberOrPayee(bytes32 id);

    constructor() EIP712("SubscriptionManager", "1") {}

    /// @notice Registers terms the subscriber signed; anyone may submit them. Charges nothing: the first
    /// period is charged by a separate `charge`, so a registration never moves money by itself.
    function subscribe(Subscription calldata terms, bytes calldata signature) external returns (bytes32 id) {
        id = _register(terms, signature);
    }

    /// @notice As `subscribe`, and sets the manager's allowance by the token's EIP-2612 `permit` in the same
    /// transaction, so a wallet without ETH subscribes with two signatures. `permitValue` is what the
    /// subscriber signed in the permit (the service asks for `amount` times the periods it covers).
    function subscribeWithPermit(
        Subscription calldata terms,
        bytes calldata signature,
        uint256 permitValue,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external returns (bytes32 id) {
        id = _register(terms, signature);
        // A permit is public once it is in a mempool: whoever sent it first used its nonce, and ours then
        // reverts. That is harmless when the allowance it set is there, so only a missing allowance fails.
        try IERC20Permit(terms.token).permit(terms.subscriber, address(this), permitValue, deadline, v, r, s) {}
        catch {
            if (IERC20(terms.token).allowance(terms.subscriber, address(this)) < permitValue) revert PermitNotApplied(id);
        }
    }

    /// @notice Moves exactly `amount` from the subscriber to the payee for the current period; anyone may call.
    function charge(bytes32 id) external returns (uint256 periodIndex) {
        Registration storage registration = _registrations[id];
        if (!registration.registered) revert UnknownSubscription(id);
        if (registration.cancelled) revert SubscriptionCancelled(id);
        if (block.timestamp < registration.start) revert NotStarted(id);
        if (block.timestamp >= registration.end) revert SubscriptionEnded(id);
        periodIndex = (block.timestamp - registration.start) / registration.period;
        if (periodIndex < registration.nextPeriod) revert AlreadyCharged(id, periodIndex);

        // Recorded before the external call: a re-entering token cannot charge the same period twice.
        // periodIndex < end / period < 2^48, so the cast and the + 1 cannot overflow.
        registration.nextPeriod = uint48(periodIndex + 1);
        IERC20(registration.token).safeTransferFrom(registration.subscriber, registration.payee, registration.amount);
        emit Charged(id, periodIndex, registration.amount);
    }

    /// @notice Stops a subscription for good; only its subscriber or its payee may.
    function cancel(bytes32 id) external {
        Registration storage registration = _registrations[id];
        if (!registration.registered) revert UnknownSubscription(id);
        if (msg.sender != registration.subscriber && msg.sender != registration.payee) revert NotSubscriberOrPayee(id);
        _cancel(id, registration, msg.sender);
    }

    /// @notice The subscriber's gasless cancel: anyone may submit the subscriber's EIP-712 `Cancel(id)`.
    function cancelWithSignature(bytes32 id, bytes calldata signature) external {
        Registration storage registration = _registrations[id];
        if (!registration.registered) revert UnknownSubscription(id);
        bytes32 digest = _hashTypedDataV4(keccak256(abi.encode(CANCEL_TYPEHASH, id)));
        if (!SignatureChecker.isValidSignatureNowCalldata(registration.subscriber, digest, signature)) {
            revert InvalidSignature();
        }
        _cancel(id, registration, registration.subscriber);
    }

    /// @notice The on-chain id of the terms: their EIP-712 typed-data hash, known before anything is sent.
    function subscriptionId(Subscription calldata terms) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    SUBSCRIPTION_TYPEHASH,
                    terms.subscriber,
                    terms.payee,
                    terms.token,
                    terms.amount,
                    terms.period,
                    terms.start,
                    terms.end,
                    terms.salt
                )
            )
        );
    }

    function registrationOf(bytes32 id) external view returns (Registration memory) {
        return _registrations[id];
    }

    function _register(Subscription calldata terms, bytes calldata signature) private returns (bytes32 id) {
        id = subscriptionId(terms);
        if (terms.amount == 0) revert ZeroAmount();
        if (terms.period == 0) revert ZeroPeriod();
        if (terms.payee == address(0)) revert ZeroPayee();
        if (terms.end <= terms.start) revert EndNotAfterStart();
        // Terms that can never be charged would only leave an active-looking subscription behind.
        if (block.timestamp >= terms.end) revert TermsEnded(id);
        if (_registrations[id].registered) revert AlreadySubscribed(id);
        if (!SignatureChecker.isValidSignatureNowCalldata(terms.subscriber, id, signature)) revert InvalidSignature();

        _registrations[id] = Registration({
            subscriber: terms.subscriber,
            period: terms.period,
            start: terms.start,
            payee: terms.payee,
            end: terms.end,
            nextPeriod: 0,
            token: terms.token,
            registered: true,
            cancelled: false,
            amount: terms.amount
        });
        emit Subscribed(
            id, terms.subscriber, terms.payee, terms.token, terms.amount, terms.period, terms.start, terms.end
        );
    }

    function _cancel(bytes32 id, Registration storage registration, address by) private {
        if (registration.cancelled) revert SubscriptionCancelled(id);
        registration.cancelled = true;
        emit Cancelled(id, by);
    }
}
