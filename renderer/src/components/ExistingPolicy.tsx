/** What a restore does with a file already at the destination: the wizard's and the browser's choice. */
export function ExistingPolicy(props: {
  name: string;
  value: 'skip' | 'overwrite';
  onChange: (value: 'skip' | 'overwrite') => void;
}) {
  return (
    <fieldset>
      <legend>If a file already exists there</legend>
      <label className="inline">
        <input
          type="radio"
          name={props.name}
          checked={props.value === 'skip'}
          onChange={() => props.onChange('skip')}
        />{' '}
        Keep it and report it
      </label>
      <label className="inline">
        <input
          type="radio"
          name={props.name}
          checked={props.value === 'overwrite'}
          onChange={() => props.onChange('overwrite')}
        />{' '}
        Replace it with the backed-up version
      </label>
    </fieldset>
  );
}
