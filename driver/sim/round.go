package sim

import "github.com/shufflefl/shufflefl/driver/round"

// The run's configuration, defaults and records moved to package round,
// which the simulation and a deployment share. These names stay here only
// while the callers (cmd/shufflefl, audit, experiments, metrics) move to
// package round; new code uses round.

type (
	// Config is round.Config.
	Config = round.Config
	// Setting is round.Setting.
	Setting = round.Setting
	// ProtocolDefaults is round.ProtocolDefaults.
	ProtocolDefaults = round.ProtocolDefaults
	// RoundResult is round.RoundResult.
	RoundResult = round.RoundResult
	// AloneRound is round.AloneRound.
	AloneRound = round.AloneRound
	// Hypothesis is round.Hypothesis.
	Hypothesis = round.Hypothesis
	// DPrivacyRound is round.DPrivacyRound.
	DPrivacyRound = round.DPrivacyRound
	// Timing is round.Timing.
	Timing = round.Timing
	// Summary is round.Summary.
	Summary = round.Summary
	// ClusterAccuracy is round.ClusterAccuracy.
	ClusterAccuracy = round.ClusterAccuracy
	// ValidationRound is round.ValidationRound.
	ValidationRound = round.ValidationRound
	// ValidationSummary is round.ValidationSummary.
	ValidationSummary = round.ValidationSummary
	// Plan is round.Plan.
	Plan = round.Plan
	// Partition is round.Partition.
	Partition = round.Partition
)

// DefaultProtocol is round.DefaultProtocol.
const DefaultProtocol = round.DefaultProtocol

var (
	// DefaultConfig is round.DefaultConfig.
	DefaultConfig = round.DefaultConfig
	// ParseOptions is round.ParseOptions.
	ParseOptions = round.ParseOptions
	// OptionString is round.OptionString.
	OptionString = round.OptionString
	// DefaultsFor is round.DefaultsFor.
	DefaultsFor = round.DefaultsFor
	// RunDefaults is round.RunDefaults.
	RunDefaults = round.RunDefaults
	// ApplyDefaults is round.ApplyDefaults.
	ApplyDefaults = round.ApplyDefaults
	// FlagName is round.FlagName.
	FlagName = round.FlagName
	// BestPerGroup is round.BestPerGroup.
	BestPerGroup = round.BestPerGroup
	// Budgets is round.Budgets.
	Budgets = round.Budgets
	// CentralTarget is round.CentralTarget.
	CentralTarget = round.CentralTarget
	// PartitionData is round.PartitionData.
	PartitionData = round.PartitionData
	// ChooseHypothesis is round.ChooseHypothesis.
	ChooseHypothesis = round.ChooseHypothesis
	// SampleFixed is round.SampleFixed.
	SampleFixed = round.SampleFixed
)
