// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @notice Pays a partner's USDC reward from the partner's own wallet (which approved this contract) to the
/// recipient a voucher names, once per reward. The voucher is signed by the service's voucher key; anyone may
/// submit it (the recipient is fixed by the voucher), so a relayer can claim for a wallet without ETH.
contract RewardDistributor is EIP712, Ownable {
    using SafeERC20 for IERC20;

    struct RewardVoucher {
        bytes32 rewardId;
        address funder;
        address recipient;
        address token;
        uint256 amount;
        uint256 deadline;
    }

    bytes32 public constant REWARD_VOUCHER_TYPEHASH = keccak256(
        "RewardVoucher(bytes32 rewardId,address funder,address recipient,address token,uint256 amount,uint256 deadline)"
    );

    address public voucherSigner;

    mapping(bytes32 rewardId => bool) private _claimed;

    event RewardClaimed(
        bytes32 indexed rewardId, address indexed funder, address indexed recipient, address token, uint256 amount
    );
    event VoucherSignerChanged(address indexed signer);

    error VoucherExpired();
    error InvalidVoucherSignature();
    error AlreadyClaimed(bytes32 rewardId);
    error ZeroAmount();

    constructor(address voucherSigner_, address initialOwner) EIP712("RewardDistributor", "1") Ownable(initialOwner) {
        _setVoucherSigner(voucherSigner_);
    }

    function claim(RewardVoucher calldata voucher, bytes calldata signature) external {
        if (block.timestamp > voucher.deadline) revert VoucherExpired();
        if (voucher.amount == 0) revert ZeroAmount();
        if (!_isSignedByVoucherSigner(voucher, signature)) revert InvalidVoucherSignature();
        if (_claimed[voucher.rewardId]) revert AlreadyClaimed(voucher.rewardId);

        // Marked before the external call: a re-entering token cannot claim the same reward twice.
        _claimed[voucher.rewardId] = true;
        IERC20(voucher.token).safeTransferFrom(voucher.funder, voucher.recipient, voucher.amount);
        emit RewardClaimed(voucher.rewardId, voucher.funder, voucher.recipient, voucher.token, voucher.amount);
    }

    function setVoucherSigner(address signer) external onlyOwner {
        _setVoucherSigner(signer);
    }

    function claimed(bytes32 rewardId) external view returns (bool) {
        return _claimed[rewardId];
    }

    function voucherDigest(RewardVoucher calldata voucher) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    REWARD_VOUCHER_TYPEHASH,
                    voucher.rewardId,
                    voucher.funder,
                    voucher.recipient,
                    voucher.token,
                    voucher.amount,
                    voucher.deadline
                )
            )
        );
    }

    function _isSignedByVoucherSigner(RewardVoucher calldata voucher, bytes calldata signature)
        private
        view
        returns (bool)
    {
        (address recovered, ECDSA.RecoverError recoverError,) =
            ECDSA.tryRecoverCalldata(voucherDigest(voucher), signature);
        return recoverError == ECDSA.RecoverError.NoError && recovered == voucherSigner;
    }

    function _setVoucherSigner(address signer) private {
        voucherSigner = signer;
        emit VoucherSignerChanged(signer);
    }
}
